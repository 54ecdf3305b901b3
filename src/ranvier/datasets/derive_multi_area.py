"""Derive the network structure of the multi-area model (Schmidt et al. 2018)
by running the model's own reference code (INM-6/multi-area-model) and export
it as JSON + NPZ.

`python -m ranvier.datasets fetch multi-area-model` runs this script (docs/data.md): from a
working copy of the repository (with a config.py), with a stub `nest` module on sys.path (NEST
itself is not needed for the structure), in an environment with the pinned packages:

    cd $WORK/src && WORK=$WORK COMMIT=... COMMIT_DATE=... python derive_multi_area.py OUTDIR

(or REPO=path/to/clone instead of COMMIT and COMMIT_DATE, to read them from its git history).
This script only calls the repository's public API (MultiAreaModel) and reads
its shipped data files; it contains none of the repository's code. It is not
imported by Ranvier: it runs in the derivation's own environment.
"""
import json
import os
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version

WORK = os.environ['WORK']                # scratch folder holding stubs/ and src/
sys.path.insert(0, os.path.join(WORK, 'stubs'))   # stub 'nest' module (no NEST installed)
sys.path.insert(0, os.path.join(WORK, 'src'))     # working copy of the repository

import numpy as np  # noqa: E402
from multiarea_model import MultiAreaModel  # noqa: E402
from multiarea_model.default_params import (  # noqa: E402
    network_params as DEFAULT_NETWORK_PARAMS, sim_params as DEFAULT_SIM_PARAMS)

OUT = sys.argv[1]
SRC = os.path.join(WORK, 'src')
os.makedirs(OUT, exist_ok=True)

if 'COMMIT' in os.environ:      # a downloaded archive of the pinned commit: no git history
    commit, commit_date = os.environ['COMMIT'], os.environ['COMMIT_DATE']
else:
    REPO_GIT = os.path.join(os.environ['REPO'], '.git') if os.path.isdir(os.path.join(os.environ['REPO'], '.git')) else os.environ['REPO']
    commit = subprocess.check_output(['git', '--git-dir=' + REPO_GIT, 'rev-parse', 'HEAD'],
                                     text=True).strip()
    commit_date = subprocess.check_output(['git', '--git-dir=' + REPO_GIT, 'log', '-1',
                                           '--format=%cI', 'HEAD'], text=True).strip()

# ---------------------------------------------------------------- models
# 1) default configuration (default_params.py): metastable weights chi=1.9,
#    chi_I=2, stabilized in-degrees K_prime_original.npy
M = MultiAreaModel({})
# 2) ground state (only cc weight factors differ)
M_gs = MultiAreaModel({'connection_params': {'cc_weights_factor': 1.0,
                                             'cc_weights_I_factor': 1.0}})
# 3) data-derived in-degrees before the stabilization of Schuecker et al. 2017
M_raw = MultiAreaModel({'connection_params': {'K_stable': None}})

areas = list(M.area_list)
pops8 = ['23E', '23I', '4E', '4I', '5E', '5I', '6E', '6I']
structure = {a: list(M.structure[a]) for a in areas}
index = ['-'.join((a, p)) for a in areas for p in structure[a]]
n = len(index)
assert n == 254 and M.K_matrix.shape == (n, n + 1)
assert np.allclose(M.K_matrix, M_gs.K_matrix) and np.allclose(M.N_vec, M_gs.N_vec)
assert np.allclose(M.K_matrix[:, -1], M_raw.K_matrix[:, -1])
assert np.allclose(M.N_vec, M_raw.N_vec)

cp = M.params['connection_params']
dp = M.params['delay_params']
ip = M.params['input_params']
npar = M.params['neuron_params']
snd = npar['single_neuron_dict']
dt = DEFAULT_SIM_PARAMS['dt']

# block mask: same area (intra-areal) vs cortico-cortical
area_of = np.array([a for a in areas for _ in structure[a]])
same = area_of[:, None] == area_of[None, :]


def nested4(mat):
    """dense (254 x 254[+1]) matrix -> {ta: {tp: {sa: {sp: v}}}} for existing pops."""
    d = {}
    for i, (ta, tp) in enumerate((a, p) for a in areas for p in structure[a]):
        row = d.setdefault(ta, {}).setdefault(tp, {})
        for j, (sa, sp) in enumerate((a, p) for a in areas for p in structure[a]):
            row.setdefault(sa, {})[sp] = float(mat[i, j])
    return d


def per_pop(vec):
    d = {}
    for i, (a, p) in enumerate((a, p) for a in areas for p in structure[a]):
        d.setdefault(a, {})[p] = float(vec[i])
    return d


N_vec = M.N_vec.copy()
N_int = np.floor(N_vec).astype(np.int64)   # NEST creates int(N) neurons
K = M.K_matrix[:, :-1].copy()
K_ext = M.K_matrix[:, -1].copy()
S = M.syn_matrix[:, :-1].copy()            # synapses = K * N (float)
S_int = np.floor(S).astype(np.int64)       # NEST: fixed_total_number N=int(synapses)
S_ext = M.syn_matrix[:, -1].copy()
assert np.allclose(S, K * N_vec[:, None])
K_raw = M_raw.K_matrix[:, :-1].copy()
S_raw = M_raw.syn_matrix[:, :-1].copy()

W = M.W_matrix[:, :-1].copy()              # pA, default = metastable state
W_ext = M.W_matrix[:, -1].copy()
W_gs = M_gs.W_matrix[:, :-1].copy()
# W_sd (no 'external' entry in the model's W_sd dict)
W_sd = np.array([[M.W_sd[ta][tp][sa][sp]
                  for sa in areas for sp in structure[sa]]
                 for ta in areas for tp in structure[ta]])
W_sd_gs = np.array([[M_gs.W_sd[ta][tp][sa][sp]
                     for sa in areas for sp in structure[sa]]
                    for ta in areas for tp in structure[ta]])

D = np.array([[M.distances[t][s] for s in areas] for t in areas])   # mm
mean_delay_cc = D / dp['interarea_speed']                              # ms

# Per-connection mean delay as used by simulation.connect()
src_is_E = np.array(['E' in idx.split('-')[1] for idx in index])
ai = {a: k for k, a in enumerate(areas)}
area_idx = np.array([ai[a] for a in area_of])
Dmean = np.where(same,
                 np.where(src_is_E[None, :], dp['delay_e'], dp['delay_i']),
                 mean_delay_cc[area_idx[:, None], area_idx[None, :]])


def totals(Smat, Sint=None):
    t = {'all_recurrent': float(Smat.sum()),
         'intra_areal': float(Smat[same].sum()),
         'cortico_cortical': float(Smat[~same].sum())}
    if Sint is not None:
        t['all_recurrent_int_truncated'] = int(Sint.sum())
    return t


# ---------------------------------------------------------- weight rules
PSC_e = float(M.W['V1']['23E']['V1']['23E'])   # pA for PSP_e = 0.15 mV
rules = {}
for label, m in [('metastable_state_default', M), ('ground_state', M_gs)]:
    c = m.params['connection_params']
    r = {
        'cc_weights_factor_chi': c['cc_weights_factor'],
        'cc_weights_I_factor_chi_I': c['cc_weights_I_factor'],
        'intra_E_to_any_pA': float(m.W['V1']['23E']['V1']['23E']),
        'intra_4E_to_23E_pA': float(m.W['V1']['23E']['V1']['4E']),
        'intra_I_to_any_pA': float(m.W['V1']['23E']['V1']['23I']),
        'cc_E_to_E_pA': float(m.W['V1']['23E']['V2']['23E']),
        'cc_E_to_I_pA': float(m.W['V1']['23I']['V2']['23E']),
        'external_pA': float(m.W['V1']['23E']['external']['external']),
    }
    rules[label] = r
# consistency of the rule table with the per-connection matrices
for m, Wm in [(M, W), (M_gs, W_gs)]:
    r = rules['metastable_state_default' if m is M else 'ground_state']
    tgt_is_I = np.array(['I' in idx.split('-')[1] for idx in index])
    exp = np.where(same, np.where(src_is_E[None, :], r['intra_E_to_any_pA'],
                                  r['intra_I_to_any_pA']),
                   np.where(tgt_is_I[:, None], r['cc_E_to_I_pA'], r['cc_E_to_E_pA']))
    is4E = np.array([idx.endswith('-4E') for idx in index])
    is23E = np.array([idx.endswith('-23E') for idx in index])
    exp = np.where(same & is23E[:, None] & is4E[None, :], r['intra_4E_to_23E_pA'], exp)
    # cc entries from I sources carry a (never used) weight in the model; compare E sources only
    chk = same | src_is_E[None, :]
    assert np.allclose(Wm[chk], exp[chk])

# ------------------------------------------------------ reference rates
with open(os.path.join(SRC, 'tests', 'fullscale_rates.json')) as f:
    fullscale_rates = json.load(f)
ref = np.load(os.path.join(SRC, 'M2E_pop_rates_ref.npy'))
assert ref.shape == (8, 32)
rows_rev = ['6I', '6E', '5I', '5E', '4I', '4E', '23I', '23E']   # row order in the .npy
m2e = {a: {p: float(ref[rows_rev.index(p), k]) for p in structure[a]}
       for k, a in enumerate(areas)}
# TH has no layer 4: rows 4E/4I are 0 in the file
assert ref[rows_rev.index('4E'), areas.index('TH')] == 0.0

# ---------------------------------------------------------------- JSON
def installed_version(name):
    try:
        return version(name)
    except PackageNotFoundError:        # recorded as absent (a test's stand-in for the model)
        return None


pkg = {p: installed_version(p) for p in ['numpy', 'scipy', 'pandas', 'nested_dict', 'dicthash',
                                          'matplotlib']}
out = {
    'format': 'multi-area-model network structure, derived (see README.md)',
    'provenance': {
        'repository': 'INM-6/multi-area-model',
        'commit': commit,
        'commit_date': commit_date,
        'model_label_dicthash': M.label,
        'model_label_ground_state_variant': M_gs.label,
        'model_label_unstabilized_variant': M_raw.label,
        'python': sys.version.split()[0],
        'packages': pkg,
        'license': 'CC BY-NC-SA 4.0 (LICENSE.md of the repository); this file is '
                   'Adapted Material of that repository and carries the same license',
        'R_used': False,
        'notes': 'SLN fit used the hard-coded parameters built into '
                 'VisualCortex_Data.py (no R installation); NEST replaced by an empty stub '
                 'module (structure code does not call NEST).',
    },
    'units': {
        'N': 'neurons', 'K': 'synapses per target neuron (in-degree)',
        'synapses': 'synapses (count, float as computed; NEST creates int(value))',
        'weights': 'pA (amplitude of the exponential PSC; negative = inhibitory)',
        'delays': 'ms', 'distances': 'mm', 'speed': 'mm/ms', 'rates': 'spikes/s',
        'neuron': 'mV, pF, ms, pA (NEST iaf_psc_exp conventions)'},
    'areas': areas,
    'population_list': pops8,
    'populations': structure,
    'index': index,
    'index_note': 'Row/column order of all matrices in structure.npz: population '
                  "'AREA-POP' in this order (254 = 31*8 + 6; TH has no 4E/4I).",
    'neuron_numbers': {
        'N': per_pop(N_vec),
        'N_int': {a: {p: int(v) for p, v in d.items()} for a, d in per_pop(N_int).items()},
        'area_totals': {a: float(N_vec[area_of == a].sum()) for a in areas},
        'total': float(N_vec.sum()),
        'total_int': int(N_int.sum()),
        'note': "N: full-density population sizes under 1 mm^2 of cortex per area "
                "(network_params['surface']=1.0). The simulation creates int(N) neurons "
                "(N_int, truncation)."},
    'indegrees': {
        'K': nested4(K),
        'K_layout': 'K[target_area][target_pop][source_area][source_pop]',
        'K_ext': per_pop(K_ext),
        'K_area_level': {ta: {sa: float(v) for sa, v in M.K_areas[ta].items()}
                         for ta in areas},
        'K_area_level_note': 'synapse-weighted area-level in-degree '
                             '(sum of synapses target area <- source area / N of target '
                             "area), the model's K_areas; key 'external' = Poisson input",
        'note': 'Default configuration: connection_params.K_stable = '
                'figures/SchueckerSchmidt2017/K_prime_original.npy, i.e. the in-degree '
                'matrix after the stabilization of Schuecker, Schmidt et al. (2017) '
                '(kappa = 1.125). This is the K used by the paper simulations of '
                'Schmidt et al. (2018, PLOS CB). The purely data-derived K (before '
                'stabilization) is in structure.npz as K_unstabilized.'},
    'synapse_numbers': {
        'synapses': nested4(S),
        'external_synapses': per_pop(S_ext),
        'totals_default_stabilized': totals(S, S_int),
        'totals_unstabilized': totals(S_raw, np.floor(S_raw).astype(np.int64)),
        'total_external_poisson_synapses': float(S_ext.sum()),
        'connection_rule': "NEST 'fixed_total_number' with N = int(synapses[target][source]) "
                           'per pair of populations (autapses and multapses allowed, NEST '
                           'defaults); sources/targets drawn uniformly at random.'},
    'synapse_weights': {
        'synapse_model': 'static_synapse (current-based, exponential PSC; tau_syn_ex = '
                         'tau_syn_in = 0.5 ms)',
        'rules_pA': rules,
        'PSP_to_PSC': {
            'PSP_e_mV': cp['PSP_e'], 'PSP_e_23_4_mV': cp['PSP_e_23_4'],
            'PSP_ext_mV': cp['PSP_ext'], 'PSC_e_pA_for_PSP_e': PSC_e,
            'PSC_over_PSP_pA_per_mV': PSC_e / cp['PSP_e'],
            'note': 'PSC amplitude J such that the peak PSP (iaf_psc_exp, C_m=250 pF, '
                    'tau_m=10 ms, tau_syn=0.5 ms) is PSP_e; J = PSC_over_PSP * PSP.'},
        'g': cp['g'],
        'g_note': 'inhibitory weight = g * PSC_e (all intra-areal I sources)',
        'factor_4E_to_23E': cp['PSP_e_23_4'] / cp['PSP_e'],
        'factor_4E_to_23E_note': 'intra-areal L4E->L2/3E weight is doubled '
                                 '(PSP_e_23_4 = 0.3 mV vs PSP_e = 0.15 mV); its sd is '
                                 '0.1 * that mean; intra-areal connections only',
        'cc_factors': {
            'ground_state': {'chi': 1.0, 'chi_I': 1.0},
            'metastable_state': {'chi': 1.9, 'chi_I': 2.0},
            'default_params_py': {'chi': cp['cc_weights_factor'],
                                  'chi_I': cp['cc_weights_I_factor']},
            'note': 'cortico-cortical weights = chi * PSC_e onto E targets, '
                    'chi * chi_I * PSC_e onto I targets (only E sources 23E, 5E, 6E '
                    'project between areas). Schmidt et al. 2018 PLOS CB: ground state '
                    'chi=1; metastable (resting-state) regime chi=1.9 with chi_I=2.'},
        'relative_sd': cp['PSC_rel_sd_normal'],
        'distribution': 'normal(mean, sd = 0.1*|mean|) per synapse, redrawn (NEST 3: '
                        'nest.math.redraw; NEST 2: normal_clipped) into [0, inf) for '
                        'excitatory sources and (-inf, 0] for inhibitory intra-areal '
                        'sources; cortico-cortical always [0, inf). The cc sd scales with '
                        'chi (and chi_I) like the mean. lognormal_weights=False.',
        'external': 'Poisson input: fixed weight W_ext = PSC_over_PSP * PSP_ext (no '
                    'sd), NEST default delay (syn_spec sets no delay).'},
    'delays': {
        'delay_e_ms': dp['delay_e'], 'delay_i_ms': dp['delay_i'],
        'delay_rel_sd': dp['delay_rel'],
        'interarea_speed_mm_per_ms': dp['interarea_speed'],
        'distribution': 'normal(mean, sd = delay_rel*mean), redrawn until >= dt '
                        '(dt = %g ms; NEST 2: normal_clipped low=dt); NEST then rounds '
                        'delays to the dt grid. Intra-areal mean: delay_e for E sources, '
                        'delay_i for I sources. Inter-areal mean: '
                        'distance[target][source] / interarea_speed.' % dt,
        'dt_ms': dt,
        'distances_mm': {t: {s: float(D[i, j]) for j, s in enumerate(areas)}
                         for i, t in enumerate(areas)},
        'distances_note': 'median inter-areal white-matter distances '
                          '(raw_data/Median_Distances_81areas.csv restricted to the 32 '
                          'areas; symmetric; diagonal 0 and unused)',
        'interarea_mean_delay_ms': {t: {s: float(mean_delay_cc[i, j])
                                        for j, s in enumerate(areas)}
                                    for i, t in enumerate(areas)}},
    'neuron': {
        'model': npar['neuron_model'],
        'params': dict(snd),
        'I_e_pA': 0.0,
        'I_e_note': 'add_DC_drive is zero at full scale (it is non-zero only when '
                    'K_scaling < 1); no other DC input (dc_stimulus=False, '
                    'poisson_input=True).',
        'initial_V_m': {'distribution': 'normal', 'mean_mV': npar['V0_mean'],
                        'sd_mV': npar['V0_sd']}},
    'external_input': {
        'type': 'Poisson (poisson_input=True)',
        'rate_ext_per_source_spikes_per_s': ip['rate_ext'],
        'K_ext': per_pop(K_ext),
        'implementation': 'one poisson_generator per population with rate '
                          'rate_ext*K_ext, connected all-to-all, so each neuron receives '
                          'an independent Poisson train of rate rate_ext*K_ext[area][pop] '
                          'with weight W_ext.',
        'W_ext_pA': float(W_ext[0]),
        'factors_already_in_K_ext': {'fac_nu_ext_5E': cp['fac_nu_ext_5E'],
                                     'fac_nu_ext_6E': cp['fac_nu_ext_6E'],
                                     'fac_nu_ext_TH (TH 23E and 5E)': cp['fac_nu_ext_TH']},
        'DC_drive_pA': 0.0},
    'connection_params_default': {k: (v if not isinstance(v, str) else
                                      os.path.relpath(v, SRC) if v.startswith(SRC) else v)
                                  for k, v in cp.items()},
    'reference_rates': {
        'fullscale_rates_json': {
            'rates': fullscale_rates,
            'source': 'tests/fullscale_rates.json (added in the initial commit '
                      'f0a7e76, 2018-03-21)',
            'meaning': "Population-averaged rates of the full-scale model; the repository "
                       "uses them only as 'fullscale_rates' to rescale weights and add DC "
                       "drive when N_scaling/K_scaling < 1, and as replacement input rates "
                       "in tests. The repository does not document which simulation or "
                       "state (ground vs metastable, mean-field vs spiking) produced them."},
        'M2E_pop_rates_ref': {
            'rates': m2e,
            'source': 'M2E_pop_rates_ref.npy (shape 8x32: rows 6I,6E,5I,5E,4I,4E,23I,23E; '
                      'columns = areas in the order above; TH 4E/4I = 0)',
            'meaning': 'Regression reference of M2E_statistical_test.ipynb (2024): a '
                       'DOWN-SCALED simulation with N_scaling = K_scaling = 0.006, '
                       'fullscale_rates = tests/fullscale_rates.json (weights scaled by '
                       '1/sqrt(K_scaling) plus compensating DC), default parameters at that '
                       'time (chi=1.9, chi_I=2, K_stable=K_prime_original.npy; the notebook '
                       'comment says ground state but its conn_params are not passed and '
                       'are metastable values anyway), t_sim = 2000 ms, rates from spikes '
                       'in (500, 2000) ms, 1 MPI process x 1 thread, rng_seed 1, NEST 3 '
                       '(EBRAINS lab kernel). Not a full-scale reference; the notebook '
                       'tests exact equality.'}},
}
with open(os.path.join(OUT, 'structure.json'), 'w') as f:
    json.dump(out, f, separators=(',', ':'))

np.savez_compressed(
    os.path.join(OUT, 'structure.npz'),
    index=np.array(index), areas=np.array(areas),
    N=N_vec, N_int=N_int,
    K=K, K_ext=K_ext, synapses=S, synapses_int=S_int, synapses_ext=S_ext,
    K_unstabilized=K_raw, synapses_unstabilized=S_raw,
    W_metastable=W, W_sd_metastable=W_sd, W_ground=W_gs, W_sd_ground=W_sd_gs,
    W_ext=W_ext,
    delay_mean=Dmean, distances_mm=D, interarea_mean_delay_ms=mean_delay_cc,
    fullscale_rates=np.array([fullscale_rates[a][p] for a in areas for p in structure[a]]),
    M2E_pop_rates_ref=np.array([m2e[a][p] for a in areas for p in structure[a]]),
)

summary = {
    'commit': commit, 'label': M.label, 'N_total': float(N_vec.sum()),
    'N_total_int': int(N_int.sum()),
    'syn_default': totals(S, S_int), 'syn_unstab': totals(S_raw),
    'ext_syn': float(S_ext.sum()), 'PSC_e': PSC_e, 'rules': rules,
    'K_mean_per_neuron': float(S.sum() / N_vec.sum()),
    'min_offdiag_distance': float(D[~np.eye(32, dtype=bool)].min()),
    'max_distance': float(D.max()),
    'packages': pkg,
}
print(json.dumps(summary, indent=1))
