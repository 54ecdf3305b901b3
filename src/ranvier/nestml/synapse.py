"""From a .nestml synapse model to one C++ synapse rule for Ranvier's synapse interface
(cpp/synapses/segment_delivery.hpp, loaded through cpp/synapses/rule_abi.hpp).

NESTML's front end parses and checks the model, ODE-toolbox solves its equations (exact
propagators of the interval __h); NESTML's C++ expression printer prints expressions with
ranvier.nestml.generate's printers. The order of a delivery is NESTML's NEST target's
(SynapseHeader.h.jinja2, send()): at a pre-synaptic spike at t_pre with the synapse's previous
one at t_last (0 before the first), each target spike t_post in (t_last - d, t_pre - d] (d the
dendritic delay) in order: the state is propagated to t_post + d (the update block, with
integrate_odes() applying the propagators of the interval) and onReceive of the post-synaptic
port runs (with t = t_post); then the state is propagated to t_pre and onReceive of the
pre-synaptic port runs (t = t_pre), whose emit_spike(...) gives the efficacy delivered.

The synapse's own state (every state variable but the weight) is per synapse; the weight is the
engine's stored weight: a state variable (it changes, and emit_spike must deliver it) or a
parameter (the projection's weight per synapse, fixed; emit_spike may scale it).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError
from .generate import (NESTML_VERSION, Unsupported, _Context, _fail, _function_code, _ident, _line, _literal_value,
                       _NumericSolver, _printer, _Statements, _unit_of)

# random numbers one pre-synaptic spike may draw per synapse: one Philox block
MAX_DRAWS = 4


@dataclass
class GeneratedSynapse:
    """What the Python synapse kind needs besides the C++ source."""
    nestml_name: str
    engine_name: str
    source: str
    path: str
    weight_variable: str
    weight_is_state: bool
    pre_port: str
    post_port: str | None
    parameters: list = field(default_factory=list)     # (name, unit, default or None, description)
    state: list = field(default_factory=list)          # (name, unit, initial as written): the engine's state doubles
    random: bool = False                               # draws random numbers: two more doubles (target id, index)
    digest: str = ""


def _load(path: str):
    """(the synapse model after NESTML's transformations, its metadata) from NESTML's pipeline."""
    import tempfile

    from pynestml.cocos.co_cos_manager import CoCosManager
    from pynestml.codegeneration.python_standalone_code_generator import PythonStandaloneCodeGenerator
    from pynestml.frontend.pynestml_frontend import (configure_front_end, get_parsed_models, transform_models,
                                                     transformers_from_target_name)
    from pynestml.utils.logger import Logger

    configure_front_end(path, "NONE", target_path=tempfile.mkdtemp(prefix="ranvier-nestml-"), logging_level="ERROR")
    models = get_parsed_models()
    if not models:
        raise ConfigError(f"{path}: NESTML could not parse it (run `nestml --input_path {path}` for its messages)")
    synapses = [m for m in models if m.get_name().endswith("synapse")]
    if len(synapses) != 1:
        raise ConfigError(f"{path}: holds {len(synapses)} synapse models (a name ending in 'synapse'); give a file "
                          f"with one")
    model = synapses[0]
    CoCosManager.check_cocos(model)
    if Logger.has_errors(model):
        raise ConfigError(f"{path}: NESTML rejects model '{model.get_name()}'; fix the model "
                          f"(`nestml --input_path {path}` prints every message)")
    _check_before(path, model)
    transformers, _ = transformers_from_target_name("NEST")      # NEST's names (lambda stays lambda)
    models_t, metadata = transform_models(transformers, [model])
    model = models_t[0]
    meta = metadata[model.get_name()]
    if meta.get("numeric_solver") is not None:
        eq = model.get_equations_blocks()[0] if model.get_equations_blocks() else model
        _fail(path, eq, "a synapse's equations that ODE-toolbox cannot solve exactly (a numeric solver)")
    PythonStandaloneCodeGenerator().analyse_transform_synapses([model], metadata)
    return model, metadata[model.get_name()]


def _check_before(path: str, model) -> None:
    """Refuses what the synapse interface does not hold, on the model as written."""
    for block in model.get_equations_blocks():
        for k in block.get_kernels():
            _fail(path, k, f"a kernel in a synapse model ('{k.get_variables()[0].get_name()}'; convolutions of "
                           f"spike trains)")
        for inline in block.get_inline_expressions():
            _fail(path, inline, f"an inline expression in a synapse model ('{inline.get_variable_name()}')")
    for blk in model.get_on_condition_blocks():
        _fail(path, blk, "an onCondition block in a synapse model")
    for block in model.get_input_blocks():
        for p in block.get_input_ports():
            if p.is_continuous():
                _fail(path, p, f"a continuous input port in a synapse model ('{p.get_name()}': a post-synaptic "
                               f"variable read by the synapse)")
            if p.has_size_parameter():
                _fail(path, p, f"the vector input port '{p.get_name()}'")


def _ports(path, model, post_ports):
    spikes = [p for b in model.get_input_blocks() for p in b.get_input_ports() if p.is_spike()]
    post = [p for p in spikes if p.get_name() in post_ports]
    pre = [p for p in spikes if p.get_name() not in post_ports]
    if not pre:
        _fail(path, model, "a synapse without a pre-synaptic spike port")
    if len(pre) > 1:
        _fail(path, pre[1], f"a second pre-synaptic spike port ('{pre[1].get_name()}': a third factor, such as "
                            f"a volume transmitter's spikes; the post-synaptic ports are those named by "
                            f"post_ports={tuple(post_ports)!r})")
    if len(post) > 1:
        _fail(path, post[1], "more than one post-synaptic spike port")
    return pre[0].get_name(), (post[0].get_name() if post else None)


def _declarations(blocks):
    out = []
    for block in blocks:
        for decl in block.get_declarations():
            for var in decl.get_variables():
                out.append((var.get_complete_name(), decl))
    return out


def _emits(stmts):
    """The emit_spike() calls among statements, nested ones too."""
    from pynestml.symbols.predefined_functions import PredefinedFunctions
    found = []

    def visit(body):
        for st in body.get_stmts():
            if st.is_small_stmt():
                s = st.small_stmt if hasattr(st, "small_stmt") else st.get_small_stmt()
                if s.is_function_call() and s.get_function_call().get_name() == PredefinedFunctions.EMIT_SPIKE:
                    found.append(s.get_function_call())
            else:
                c = st.compound_stmt if hasattr(st, "compound_stmt") else st.get_compound_stmt()
                if c.is_if_stmt():
                    i = c.get_if_stmt()
                    visit(i.get_if_clause().get_stmts_body())
                    for e in i.get_elif_clauses():
                        visit(e.get_stmts_body())
                    if i.has_else_clause():
                        visit(i.get_else_clause().get_stmts_body())
    visit(stmts)
    return found


class _SynapseStatements(_Statements):
    """The statements of a synapse: emit_spike(w) gives the efficacy; integrate_odes() applies
    ODE-toolbox's propagators over the interval."""

    def __init__(self, path, print_expr, analytic, update_exprs):
        super().__init__(path, print_expr, analytic, [], update_exprs, _NumericSolver([], {}))
        self.emit_allowed = False

    def call(self, call, depth):
        from pynestml.symbols.predefined_functions import PredefinedFunctions
        pad = "  " * depth
        n = call.get_name()
        if n == PredefinedFunctions.EMIT_SPIKE:
            if not self.emit_allowed:
                _fail(self.path, call, "emit_spike() outside onReceive of the pre-synaptic port")
            args = call.get_args()
            if len(args) != 1:
                _fail(self.path, call, "emit_spike() without exactly one argument (the weight; a delay argument)")
            return [f"{pad}emitted = {self.P(args[0])};"]
        if n == PredefinedFunctions.INTEGRATE_ODES:
            wanted = [str(a) for a in call.get_args()]
            for w in wanted:
                if w not in self.analytic:
                    _fail(self.path, call, f"integrate_odes() of '{w}' (not a state variable with an ODE)")
            names = [v for v in self.analytic if not wanted or v in wanted]
            out = [f"{pad}{{  // integrate_odes({', '.join(wanted)})"]
            out += [f"{pad}  const double t_{_ident(v)} = {self.P(self.update_exprs[v])};" for v in names]
            out += [f"{pad}  v_{_ident(v)} = t_{_ident(v)};" for v in names]
            return out + [f"{pad}}}"]
        return super().call(call, depth)


def generate(path: str | Path, weight_variable: str = "w", post_ports=("post_spikes",)) -> GeneratedSynapse:
    """Parses, checks and analyses the synapse model of a .nestml file; returns Ranvier's C++ rule
    for it. Raises ConfigError (NESTML rejects the model) or Unsupported (a construct outside what
    the synapse interface holds: the message names it and its line)."""
    from pynestml.symbols.symbol import SymbolKind

    path = str(Path(path).resolve())
    if not Path(path).is_file():
        raise ConfigError(f"NESTML model file '{path}' does not exist")
    model, meta = _load(path)
    scope = model.get_scope()
    pre_port, post_port = _ports(path, model, tuple(post_ports))
    wv = weight_variable
    state_decls = _declarations(model.get_state_blocks())
    param_decls = _declarations(model.get_parameters_blocks())
    if wv in [n for n, _ in state_decls]:
        weight_is_state = True
    elif wv in [n for n, _ in param_decls]:
        weight_is_state = False
    else:
        raise Unsupported(f"{path}:{_line(model)}: the model has no state variable or parameter '{wv}' for the "
                          f"weight; name it with weight_variable=")
    kept_state = [(n, d) for n, d in state_decls if n != wv]
    analytic, update_exprs = _propagation(model, meta)

    ctx = _Context(f.get_name() for f in model.get_functions())
    ctx.time_variable = "t_ms"
    ctx.random_scope = "onReceive of the pre-synaptic port (a synapse draws its random numbers at its pre-synaptic spikes)"

    def names(name, symbol, variable):
        if name == wv:
            return "v_w"
        if symbol.is_spike_input_port() or symbol.is_continuous_input_port():
            _fail(path, variable, f"reading the input port '{name}' in an expression")
        return None
    ctx.names = names
    P = _printer(path, model, ctx).print

    def unit(n):
        sym = scope.resolve_to_symbol(n, SymbolKind.VARIABLE)
        return _unit_of(sym) if sym else ""

    parameters, param_code = _parameter_code(path, model, [x for x in param_decls if x[0] != wv], P, unit)
    internals, internal_code = _internal_code(model, P)
    init_code = _initial_code(path, kept_state, {n for n, _ in internals}, P)
    body = _SynapseStatements(path, P, analytic, update_exprs)
    update = [line for blk in model.get_update_blocks() for line in body.block(blk.get_stmts_body(), 3)]
    receive = _handlers(path, model, body, ctx, pre_port, post_port, wv, weight_is_state)
    function_code = _function_code(path, model, P)

    random = ctx.uses_random
    n_state = len(kept_state) + (2 if random else 0)
    nestml_name = model.get_name()
    fields_cpp = "\n".join(f"  double p_{_ident(n)} = 0.0;" for n in [p[0] for p in parameters] +
                           [n for n, _ in internals])
    names_cpp = ", ".join(f'"{p[0]}"' for p in parameters)
    draws, initial_ids = "", "  (void)id;"
    if random:                  # the target's id and the synapse's index, kept after the model's state
        g, k = len(kept_state), len(kept_state) + 1
        draws = (f"      // this synapse's random numbers at this spike: keyed by (seed, target, projection, index, step)\n"
                 f"      Draws rng{{philox4x32_10(make_counter(uint64_t(s_in[{g}]), Purpose::synapse_model, projection, "
                 f"uint32_t(s_in[{k}]), uint32_t(pre.step)), key), 0}};")
        initial_ids = f"  s[{g}] = double(id.target);\n  s[{k}] = double(id.index);"
    src = _TEMPLATE.format(
        path=path, nestml=nestml_name, nestml_version=NESTML_VERSION, fields=fields_cpp or "  double unused_ = 0.0;",
        names=names_cpp + (", " if names_cpp else "") + '"weight_sign", nullptr',
        functions="\n".join(function_code), params="\n".join(param_code), internals="\n".join(internal_code),
        n_state=n_state, reads="true" if post_port else "false", fixed="false" if weight_is_state else "true",
        load="\n".join(f"    double v_{_ident(n)} = s_in[{i}];" for i, (n, _) in enumerate(kept_state)) or "    (void)s_in;",
        update="\n".join(update), post="\n".join(receive[post_port] if post_port else []),
        pre="\n".join(receive[pre_port]), draws=draws,
        store="\n".join(f"      s_out[{i}] = v_{_ident(n)};" for i, (n, _) in enumerate(kept_state)) or "      (void)s_out;",
        ret="v_w" if weight_is_state else "emitted", init="\n".join(init_code),
        init_store="\n".join(f"  s[{i}] = v_{_ident(n)};" for i, (n, _) in enumerate(kept_state)),
        initial_ids=initial_ids, engine_name="@ENGINE_NAME@")
    digest = hashlib.sha256(src.encode()).hexdigest()[:16]
    engine_name = f"nestml_{nestml_name}_{digest}"
    state = [(n, unit(n), str(d.get_expression()).strip() if d.has_expression() else "0") for n, d in kept_state]
    return GeneratedSynapse(nestml_name=nestml_name, engine_name=engine_name,
                            source=src.replace("@ENGINE_NAME@", engine_name), path=path, weight_variable=wv,
                            weight_is_state=weight_is_state, pre_port=pre_port, post_port=post_port,
                            parameters=parameters, state=state, random=random, digest=digest)


def _propagation(model, meta):
    """The variables ODE-toolbox solved exactly (sorted: its order varies from run to run) and
    their update expressions over an interval __h, as NESTML's NEST target parses them."""
    from pynestml.utils.model_parser import ModelParser
    from pynestml.utils.ode_toolbox_utils import ODEToolboxUtils
    from pynestml.visitors.ast_symbol_table_visitor import ASTSymbolTableVisitor
    solver = meta.get("analytic_solver")
    if not solver:
        return [], {}
    analytic = sorted(solver["state_variables"])
    scope = model.get_equations_blocks()[0].get_scope() if model.get_equations_blocks() else model.get_scope()
    update_exprs = {}
    for v in analytic:
        expr = ModelParser.parse_expression(ODEToolboxUtils._rewrite_piecewise_into_ternary(
            solver["update_expressions"][v]))
        expr.update_scope(scope)
        expr.accept(ASTSymbolTableVisitor())
        update_exprs[v] = expr
    return analytic, update_exprs


def _parameter_code(path, model, param_decls, P, unit):
    """(name, unit, literal default or None, comment) of each parameter, and the C++ that reads
    them (the weight's, where it is a parameter, is the projection's and not among them)."""
    parameters, code = [], []
    for n, decl in param_decls:
        if decl.has_size_parameter():
            _fail(path, decl, "a vector parameter")
        expr = decl.get_expression() if decl.has_expression() else None
        printed = P(expr) if expr is not None else "0.0"
        comment = decl.print_comment("").strip() if hasattr(decl, "print_comment") else ""
        parameters.append((n, unit(n), _literal_value(printed) if expr is not None else None, comment))
        code.append(f'  P.p_{_ident(n)} = has(given, "{n}") ? given.at("{n}") : ({printed});')
    if any("v_w" in line for line in code):
        _fail(path, model, "a parameter computed from the weight")
    return parameters, code


def _internal_code(model, P):
    """The internals in the model's order, __h (the interval) among them, ODE-toolbox's
    propagators last, sorted; and their C++."""
    internals = _declarations(model.get_internals_blocks())
    internals = [x for x in internals if not x[0].startswith("__P__")] + \
        sorted((x for x in internals if x[0].startswith("__P__")), key=lambda x: x[0])
    code = ["  P.p___h = interval_ms;" if n == "__h" else
            f"  P.p_{_ident(n)} = {P(d.get_expression()) if d.has_expression() else '0.0'};" for n, d in internals]
    return internals, code


def _initial_code(path, kept_state, internal_names, P):
    """The initial values of the synapse's own state, from the parameters."""
    code = []
    for n, decl in kept_state:
        if decl.has_size_parameter():
            _fail(path, decl, "a vector state variable")
        printed = P(decl.get_expression()) if decl.has_expression() else "0.0"
        if "v_w" in printed or any(f"P.p_{_ident(i)}" in printed for i in internal_names):
            _fail(path, decl, f"the initial value of '{n}' computed from the weight or an internal")
        code.append(f"  double v_{_ident(n)} = {printed};")
    return code


def _handlers(path, model, body, ctx, pre_port, post_port, wv, weight_is_state) -> dict:
    """The C++ of the onReceive blocks by port, with emit_spike's checks: once, among the
    pre-synaptic block's own statements, and where the weight is a state variable, the weight,
    last. Random numbers are drawn in the pre-synaptic block alone."""
    from pynestml.symbols.predefined_functions import PredefinedFunctions

    def small(st):
        return st.small_stmt if hasattr(st, "small_stmt") else st.get_small_stmt()

    receive = {pre_port: [], post_port: []}
    emits = []
    for blk in model.get_on_receive_blocks():
        port = blk.get_port_name()
        if port not in receive:
            _fail(path, blk, f"onReceive for the port '{port}' (not a spike port of the synapse)")
        body.emit_allowed = ctx.in_step = port == pre_port
        if port == pre_port:
            stmts = blk.get_stmts_body().get_stmts()
            emits = _emits(blk.get_stmts_body())
            top = [st for st in stmts if st.is_small_stmt() and small(st).is_function_call()
                   and small(st).get_function_call().get_name() == PredefinedFunctions.EMIT_SPIKE]
            if len(emits) != 1 or len(top) != 1:
                _fail(path, blk, "onReceive of the pre-synaptic port without exactly one emit_spike() among its "
                                 "own statements (not in an if)")
            args = emits[0].get_args()
            if weight_is_state and (len(args) != 1 or str(args[0]).strip() != wv):
                _fail(path, emits[0], f"emit_spike() of other than the weight '{wv}' (a state variable: the "
                                      f"efficacy delivered is the weight)")
            if weight_is_state and top[0] is not stmts[-1]:
                _fail(path, emits[0], "statements after emit_spike() in a synapse whose weight is a state variable")
        receive[port] = body.block(blk.get_stmts_body(), 3)
        ctx.in_step = False
    if not emits:
        _fail(path, model, f"a synapse without onReceive({pre_port}) and its emit_spike()")
    if ctx.random_calls > MAX_DRAWS:
        _fail(path, model, f"more than {MAX_DRAWS} random numbers drawn at a pre-synaptic spike")
    return receive


_TEMPLATE = """\
// Generated by ranvier.nestml from {path}
// (NESTML synapse model '{nestml}', NESTML {nestml_version}); do not edit: regenerated when the model changes.
// Ranvier's synapse interface: cpp/synapses/segment_delivery.hpp; entry points: rule_abi.hpp.
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "base/distributions.hpp"
#include "base/philox.hpp"
#include "synapses/rule_abi.hpp"
#include "synapses/segment_delivery.hpp"

namespace ranvier {{
namespace {{

// The model's parameters (NESTML's names, NEST's units) and internals.
struct Params {{
{fields}
}};

const char* const kParameters[] = {{{names}}};

using Given = std::map<std::string, double>;

bool has(const Given& given, const char* name) {{ return given.count(name) > 0; }}

{functions}

// Parameters given, or the model's defaults (expressions of the parameters before them).
Params params_of(const Given& given, double h) {{
  Params P;
  (void)h;
{params}
  return P;
}}

// The internals over an interval of interval_ms (ODE-toolbox's propagators take it as __h), h the
// resolution; NESTML's NEST target recomputes them for each interval too.
void internals(Params& P, double interval_ms, double h) {{
  (void)interval_ms;
  (void)h;
{internals}
}}

// A synapse's random numbers at one pre-synaptic spike: one Philox block.
struct Draws {{
  Counter words;
  int used;
  double uniform() {{ return to_uniform(words[used++]); }}
}};

struct Rule {{
  static constexpr uint32_t kState = {n_state};
  static constexpr bool kSegmentTrace = false;
  static constexpr bool kReadsTarget = {reads};
  static constexpr bool kFixedWeight = {fixed};
  Params params;
  StepDecay decay_plus;                  // the delivery's pairing term: this rule keeps its own traces
  double h;
  Key key;
  uint32_t projection;
  double ms(int64_t step) const {{ return double(step) * h; }}

  // The target's spikes since the synapse's previous spike (onReceive of the post-synaptic port
  // at each), then, with kPre, this spike (onReceive of the pre-synaptic port). Returns the
  // weight, or the efficacy where the weight is fixed.
  template <bool kPre, class Target>
  double run(double w, const Target& target, const PreSpike& pre, const double* s_in, double* s_out) const {{
    const Params& P = params;
    (void)P;
    double v_w = w;
    double t_ms = 0.0;
    (void)t_ms;
{load}
    int64_t last = pre.step - pre.since_last;
    auto propagate = [&](int64_t to) {{
      const double interval_ms = ms(to) - ms(last);
      if (interval_ms < 1e-12) return;   // as NESTML's update_internal_state_()
      Params P = params;
      internals(P, interval_ms, h);
      t_ms = ms(last);
{update}
    }};
    for (uint32_t j = 0; j < target.count(); ++j) {{
      const int64_t seen = target.post_step(j) + pre.delay;
      propagate(seen);
      t_ms = ms(target.post_step(j));
{post}
      last = seen;
    }}
    if constexpr (kPre) {{
      propagate(pre.step);
      t_ms = ms(pre.step);
      double emitted = 0.0;
{draws}
{pre}
{store}
      return {ret};
    }} else {{
      (void)s_out;
      return v_w;
    }}
  }}
  template <class Target>
  double update(double w, const Target& target, const PreSpike& pre, double* s) const {{
    return run<true>(w, target, pre, s, s);
  }}
  template <class Target>
  double facilitated(double w, const Target& target, const PreSpike& pre, const double* s) const {{
    return run<false>(w, target, pre, s, nullptr);
  }}
}};

void check(const PlasticitySpec& spec, const std::string& where) {{
  for (const auto& [name, value] : spec.parameters) {{
    bool known = false;
    for (const char* const* n = kParameters; *n && !known; ++n) known = name == *n;
    if (!known) throw std::invalid_argument(where + "unknown parameter '" + name + "' of the NESTML synapse '{nestml}'");
    if (std::isnan(value)) throw std::invalid_argument(where + "'" + name + "' is not a number");
  }}
}}

std::unique_ptr<PlasticDelivery> make(const PlasticitySpec& spec, const RuleBuild& b) {{
  Params P = params_of(spec.parameters, b.h);
  internals(P, b.h, b.h);
  return compiled(Rule{{P, StepDecay(b.h, 1.0, true), b.h, key_from_seed(b.seed), b.projection}});
}}

void initial_state(const PlasticitySpec& spec, const SynapseId& id, double* s) {{
  const Params P = params_of(spec.parameters, 0.0);
  (void)P;
{init}
{init_store}
{initial_ids}
}}

bool negative(const PlasticitySpec& spec) {{ return rule_parameter(spec, "weight_sign") < 0; }}

}}  // namespace

extern const SynapseRule generated_rule;
const SynapseRule generated_rule{{"{engine_name}", true, check, make, {n_state}, negative, false, {reads}, initial_state}};

}}  // namespace ranvier

RANVIER_EXPORT_SYNAPSE_RULE(ranvier::generated_rule)
"""
