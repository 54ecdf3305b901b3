#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/distributions.hpp"
#include "core/local_network.hpp"
#include "core/philox.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier {

void build_thread_neurons(const EngineConfig& cfg, const Placement& placement, int rank, int thread,
                          ThreadNeurons& out) {
  const uint64_t n = placement.thread_count(rank, thread);
  out.gid.resize(n);
  out.gid_lo.resize(n);
  out.gid_hi.resize(n);
  for (uint64_t k = 0; k < n; ++k) {
    out.gid[k] = placement.gid(rank, thread, k);
    out.gid_lo[k] = uint32_t(out.gid[k]);
    out.gid_hi[k] = uint32_t(out.gid[k] >> 32);
  }
  out.V.assign(n, 0.0);
  out.c.assign(n, 0.0);
  out.refractory.assign(n, 0);
  out.next_spike.assign(n, 0);
  out.spikes_fired.assign(n, 0);
  out.ranges.clear();
  uint64_t k = 0;
  for (uint32_t p = 0; p < cfg.populations.size(); ++p) {
    const auto& pop = cfg.populations[p];
    const uint64_t begin = k;
    while (k < n && out.gid[k] < pop.first + pop.size) ++k;
    if (k > begin) out.ranges.push_back({p, begin, k});
  }
  // Inhibitory input columns for the models that split their input, after the neurons; further
  // state columns where a model needs them.
  out.input_columns = n;
  int extra = 0;
  for (auto& range : out.ranges) {
    const NeuronModel& model = neuron_model(cfg.populations[range.population].model);
    extra = std::max(extra, model.extra_columns);
    if (!model.split_input) continue;
    range.inhibitory_offset = out.input_columns - range.begin;
    out.input_columns += range.end - range.begin;
  }
  for (int i = 0; i < 3; ++i) out.extra[i].assign(i < extra ? n : 0, 0.0);
  // Each model sets the initial state of its ranges.
  const Key key = key_from_seed(cfg.seed);
  for (const auto& range : out.ranges) {
    const PopulationSpec& pop = cfg.populations[range.population];
    neuron_model(pop.model).initialize(pop, key, columns_of(out, range));
  }
}

namespace {

// Calls emit(source_gid, synapse_index) for every synapse of projection j onto target t.
// Probabilistic: Bernoulli(p) over all candidate sources (s != t) by geometric skips, in
// increasing source order. Fixed total: the target's drawn in-degree, sources uniform.
// The sources of projection j's synapses onto target t, in synapse order, into `out`.
// Probabilistic: Bernoulli(p) over all candidate sources (s != t) by geometric skips, in
// increasing source order. Fixed total: the target's drawn in-degree, sources uniform, word
// i % 4 of block i / 4 of the target's connect stream (drawn 8 blocks at a time).
void sources_of(const EngineConfig& cfg, const InDegrees& indegrees, const Key& key, uint32_t j, uint64_t t,
                std::vector<uint32_t>& words, std::vector<uint64_t>& out) {
  out.clear();
  const auto& pr = cfg.projections[j];
  const auto& src = cfg.populations[pr.source];
  if (pr.fixed_total) {
    const uint32_t k = indegrees[j][t - cfg.populations[pr.target].first];
    const size_t blocks = (size_t(k) + 3) / 4;
    if (words.size() < 4 * blocks) words.resize(4 * blocks);
    philox4x32_10_series(make_counter(t, Purpose::connect, j, 0, 0), 3, blocks, key, words.data(), blocks);
    out.resize(k);
    for (uint32_t i = 0; i < k; ++i) out[i] = src.first + ((uint64_t(words[(i & 3) * blocks + (i >> 2)]) * src.size) >> 32);
    return;
  }
  const bool self_in_source = t >= src.first && t < src.first + src.size;
  const uint64_t candidates = src.size - (self_in_source ? 1 : 0);
  if (pr.probability <= 0 || candidates == 0) return;
  auto source_of = [&](uint64_t i) {
    const uint64_t g = src.first + i;
    return self_in_source && g >= t ? g + 1 : g;
  };
  if (pr.probability >= 1) {
    for (uint64_t i = 0; i < candidates; ++i) out.push_back(source_of(i));
    return;
  }
  Stream stream(key, t, Purpose::connect, j, 0);
  const double log_q = std::log1p(-pr.probability);
  double pos = -1;
  while (true) {
    pos += 1.0 + std::floor(std::log(stream.uniform()) / log_q);
    if (pos >= double(candidates)) break;
    out.push_back(source_of(uint64_t(pos)));
  }
}

// Weight and delay of synapse `index` of projection j onto t, drawn from the synapse's stream:
// the weight from its first uniform(s), then the delay. Returns false if a draw was rejected
// and redrawn; `fast` then lacks words, and the caller replays the stream (draw_synapse_slow).
struct SynapseDraw { double weight; uint64_t delay; };

SynapseDraw draw_synapse_slow(const EngineConfig& cfg, const Key& key, uint32_t j, uint64_t t, uint32_t index,
                              double floor_steps) {
  const auto& pr = cfg.projections[j];
  Stream stream(key, t, Purpose::synapse, j, index);
  double w = pr.weight_mean;
  if (pr.weight_sd > 0 && pr.weight_clip) {
    w = pr.weight_mean + pr.weight_sd * inverse_normal(stream.uniform());
    if (!(w / pr.weight_mean > 0.0)) w = 0.0;
  } else if (pr.weight_sd > 0) {
    do { w = pr.weight_mean + pr.weight_sd * inverse_normal(stream.uniform()); }
    while (!(w / pr.weight_mean > 0.0 && w / pr.weight_mean < 2.0));
  }
  uint64_t d;
  if (pr.delay_normal) {
    double y;  // in steps
    do { y = (pr.delay_mean_ms + pr.delay_sd_ms * inverse_normal(stream.uniform())) / cfg.resolution_ms; }
    while (!(y >= floor_steps));
    d = std::max<uint64_t>(uint64_t(pr.delay_offset_steps), uint64_t(std::llround(std::min(y, 1e6))));
  } else {
    double x;
    do { x = -pr.delay_scale_ms * std::log(stream.uniform()); } while (!(x < pr.delay_cut_ms));
    d = uint64_t(pr.delay_offset_steps) + uint64_t(std::floor(x / pr.delay_step_ms)) * uint64_t(pr.delay_step_steps);
  }
  return {w, d};
}

// Groups each row by delay (stable counting sort: targets stay sorted) and writes the headers.
template <class Vec>
void group_by_delay(uint64_t N, const std::vector<uint64_t>& row_start, const std::vector<uint16_t>& delay,
                    uint64_t max_delay, Vec& syn, SynapseStore& out) {
  out.row_head.assign(N + 1, 0);
  out.seg_first.clear();
  out.seg_delay.clear();
  std::vector<uint32_t> hist(max_delay + 1, 0), start(max_delay + 1, 0);
  std::vector<uint16_t> distinct;
  std::vector<typename Vec::value_type> tmp;
  for (uint64_t s = 0; s < N; ++s) {
    out.row_head[s] = uint32_t(out.seg_first.size());
    const uint64_t b = row_start[s], e = row_start[s + 1];
    if (b == e) continue;
    distinct.clear();
    for (uint64_t i = b; i < e; ++i)
      if (hist[delay[i]]++ == 0) distinct.push_back(delay[i]);
    std::sort(distinct.begin(), distinct.end());
    uint32_t off = 0;
    for (uint16_t d : distinct) {
      start[d] = off;
      out.seg_first.push_back(uint32_t(b + off));
      out.seg_delay.push_back(d);
      off += hist[d];
      hist[d] = 0;
    }
    if (distinct.size() > 1) {
      tmp.resize(e - b);
      for (uint64_t i = b; i < e; ++i) tmp[start[delay[i]]++] = syn[i];
      std::copy(tmp.begin(), tmp.end(), syn.begin() + b);
    }
  }
  out.row_head[N] = uint32_t(out.seg_first.size());
  out.seg_first.push_back(uint32_t(syn.size()));
  out.seg_first.shrink_to_fit();
  out.seg_delay.shrink_to_fit();
}

}  // namespace

// Each target's in-degree given those before it: Binomial(remaining, 1 / targets left), one
// uniform each from the projection's own stream, so every rank draws the same numbers.
void draw_indegrees(const EngineConfig& cfg, uint32_t j, std::vector<uint32_t>& out) {
  const auto& pr = cfg.projections[j];
  out.clear();
  if (!pr.fixed_total) return;
  const uint64_t n = cfg.populations[pr.target].size;
  out.resize(n);
  Stream stream(key_from_seed(cfg.seed), j, Purpose::indegree, 0, 0);
  uint64_t remaining = pr.total_synapses;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t k = binomial_inverse(remaining, 1.0 / double(n - i), stream.uniform());
    if (k > 0xFFFFFFFFu) throw std::runtime_error("a neuron's in-degree from one projection exceeds 2^32");
    out[i] = uint32_t(k);
    remaining -= k;
  }
}

double max_abs_weight(const ProjectionSpec& pr) {
  const double m = std::abs(pr.weight_mean);
  if (pr.weight_sd <= 0) return m;
  // Uniforms lie in [2^-33, 1 - 2^-33], so |z| < 6.5.
  return pr.weight_clip ? m + 6.5 * pr.weight_sd : 2.0 * m;
}

void build_thread_synapses(const EngineConfig& cfg, const InDegrees& indegrees, const ThreadNeurons& neurons,
                           SynapseStore& out) {
  const uint64_t N = cfg.neuron_count();
  const Key key = key_from_seed(cfg.seed);
  const double scale = std::ldexp(1.0, cfg.fraction_bits);

  // Projections by target population.
  std::vector<std::vector<uint32_t>> into(cfg.populations.size());
  for (uint32_t j = 0; j < cfg.projections.size(); ++j) into[cfg.projections[j].target].push_back(j);

  // Pass 1: count synapses per source row.
  std::vector<uint64_t> fill(N + 1, 0);
  std::vector<uint32_t> words;
  std::vector<uint64_t> sources;
  for (const auto& range : neurons.ranges)
    for (uint64_t k = range.begin; k < range.end; ++k)
      for (uint32_t j : into[range.population]) {
        sources_of(cfg, indegrees, key, j, neurons.gid[k], words, sources);
        for (uint64_t src : sources) ++fill[src + 1];
      }
  for (uint64_t s = 0; s < N; ++s) fill[s + 1] += fill[s];
  const uint64_t total = fill[N];
  if (total >= (uint64_t(1) << 32)) throw std::runtime_error("more than 2^32 synapses on one thread: use more threads or ranks");
  std::vector<uint64_t> row_start(fill.begin(), fill.end());

  // Pass 2: regenerate, draw weight and delay, place each synapse in its source row. Targets
  // are visited in increasing order, so every row comes out sorted by target. A target's
  // synapses are drawn first and then stored while the destinations (random rows across the
  // whole array) are prefetched a few ahead: the stores then overlap instead of stalling.
  // Packed when every local index and every weight this thread can draw fit in 32 bits.
  int bits = 1;
  while ((uint64_t(1) << bits) < neurons.input_columns) ++bits;
  double bound = 0;
  for (const auto& range : neurons.ranges)
    for (uint32_t j : into[range.population]) bound = std::max(bound, std::rint(max_abs_weight(cfg.projections[j]) * scale));
  out.target_bits = bits < 32 && bound < std::ldexp(1.0, 31 - bits) - 1 ? bits : 0;
  out.synapses.clear();
  out.packed.clear();
  if (out.is_packed()) out.packed.resize(total);
  else out.synapses.resize(total);
  std::vector<uint16_t> delay(total);
  uint64_t max_delay = 0;
  struct Drawn { uint64_t source; int32_t weight; uint16_t delay; };
  std::vector<Drawn> drawn;
  std::vector<uint32_t> synapse_words;
  std::vector<double> z;
  auto in_tail = [](double u) { return u < kNormalLow || u > 1.0 - kNormalLow; };
  for (const auto& range : neurons.ranges) {
    for (uint64_t k = range.begin; k < range.end; ++k) {
      const uint64_t t = neurons.gid[k];
      // Split input: synapses with negative weights add into the neuron's inhibitory column.
      const uint64_t inhibitory_column = range.inhibitory_offset ? k + range.inhibitory_offset : k;
      drawn.clear();
      for (uint32_t j : into[range.population]) {
        const auto& pr = cfg.projections[j];
        const double floor_steps =
            pr.delay_redraw_below_ms >= 0 ? pr.delay_redraw_below_ms / cfg.resolution_ms : double(pr.delay_offset_steps);
        sources_of(cfg, indegrees, key, j, t, words, sources);
        const size_t m = sources.size();
        if (m == 0) continue;
        // Block 0 of every synapse's stream, 8 synapses at a time; the central normals of the
        // weight's and the delay's uniforms vectorised; tails, rejections and the exponential
        // law's logarithm per synapse.
        if (synapse_words.size() < 4 * m) { synapse_words.resize(4 * m); z.resize(2 * m); }
        philox4x32_10_series(make_counter(t, Purpose::synapse, j, 0, 0), 2, m, key, synapse_words.data(), m);
        const bool weight_draw = pr.weight_sd > 0;
        const uint32_t* wu = synapse_words.data();
        const uint32_t* du = synapse_words.data() + (weight_draw ? m : 0);
        double* zw = z.data();
        double* zd = z.data() + m;
#pragma omp simd
        for (size_t i = 0; i < m; ++i) {
          zw[i] = inverse_normal_central(to_uniform(wu[i]));
          zd[i] = inverse_normal_central(to_uniform(du[i]));
        }
        const double mean = pr.weight_mean, sd = pr.weight_sd, h = cfg.resolution_ms;
        for (size_t i = 0; i < m; ++i) {
          double w = mean;
          bool ok = true;
          if (weight_draw) {
            const double u = to_uniform(wu[i]);
            w = mean + sd * (in_tail(u) ? inverse_normal(u) : zw[i]);
            if (pr.weight_clip) { if (!(w / mean > 0.0)) w = 0.0; }
            else ok = w / mean > 0.0 && w / mean < 2.0;
          }
          uint64_t d = 0;
          if (ok && pr.delay_normal) {
            const double u = to_uniform(du[i]);
            const double y = (pr.delay_mean_ms + pr.delay_sd_ms * (in_tail(u) ? inverse_normal(u) : zd[i])) / h;
            ok = y >= floor_steps;
            d = std::max<uint64_t>(uint64_t(pr.delay_offset_steps), uint64_t(std::llround(std::min(y, 1e6))));
          } else if (ok) {
            const double x = -pr.delay_scale_ms * std::log(to_uniform(du[i]));
            ok = x < pr.delay_cut_ms;
            d = uint64_t(pr.delay_offset_steps) + uint64_t(std::floor(x / pr.delay_step_ms)) * uint64_t(pr.delay_step_steps);
          }
          if (!ok) {
            const SynapseDraw slow = draw_synapse_slow(cfg, key, j, t, uint32_t(i), floor_steps);
            w = slow.weight;
            d = slow.delay;
          }
          if (d > 0xFFFF) throw std::runtime_error("a delay exceeds 65535 steps: use a coarser resolution_ms");
          max_delay = std::max(max_delay, d);
          drawn.push_back({sources[i], int32_t(std::rint(w * scale)), uint16_t(d)});
        }
      }
      constexpr size_t kAhead = 16;
      for (size_t i = 0; i < drawn.size(); ++i) {
        if (i + kAhead < drawn.size()) {
          const uint64_t ahead = fill[drawn[i + kAhead].source];
          if (out.is_packed()) __builtin_prefetch(&out.packed[ahead], 1);
          else __builtin_prefetch(&out.synapses[ahead], 1);
          __builtin_prefetch(&delay[ahead], 1);
        }
        const uint64_t pos = fill[drawn[i].source]++;
        const uint32_t column = uint32_t(drawn[i].weight < 0 ? inhibitory_column : k);
        if (out.is_packed()) out.packed[pos] = (uint32_t(drawn[i].weight) << bits) | column;
        else out.synapses[pos] = {column, drawn[i].weight};
        delay[pos] = drawn[i].delay;
      }
    }
  }

  std::vector<uint64_t>().swap(fill);
  if (out.is_packed()) group_by_delay(N, row_start, delay, max_delay, out.packed, out);
  else group_by_delay(N, row_start, delay, max_delay, out.synapses, out);
}

}  // namespace ranvier
