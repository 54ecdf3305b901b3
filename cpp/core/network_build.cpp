#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "base/distributions.hpp"
#include "core/local_network.hpp"
#include "base/philox.hpp"
#include "base/simd.hpp"
#include "neurons/neuron_model.hpp"
#include "synapses/synapse_rule.hpp"

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
    const PopulationSpec& pop = cfg.populations[range.population];
    const NeuronModel::Layout layout = neuron_model(pop.model).layout_of(pop);
    extra = std::max(extra, layout.extra_columns);
    range.input_columns = uint32_t(layout.input_columns());
    if (range.input_columns == 1) continue;
    range.inhibitory_offset = out.input_columns - range.begin;
    out.input_columns += uint64_t(range.input_columns - 1) * (range.end - range.begin);
  }
  for (int i = 0; i < kMaxExtraColumns; ++i) out.extra[i].assign(i < extra ? n : 0, 0.0);
  // Each model sets the initial state of its ranges.
  const Key key = key_from_seed(cfg.seed);
  for (const auto& range : out.ranges) {
    const PopulationSpec& pop = cfg.populations[range.population];
    neuron_model(pop.model).initialize(pop, key, cfg.resolution_ms, columns_of(out, range));
  }
}

namespace {

// A buffer whose resize() leaves new elements unset, for per-target arrays that are written in
// full right after: zeroing them as they grew from one projection's size to the next cost up to
// 13 bytes of stores per synapse.
template <class T>
struct UninitialisedAllocator : std::allocator<T> {
  template <class U>
  struct rebind { using other = UninitialisedAllocator<U>; };
  UninitialisedAllocator() = default;
  template <class U>
  UninitialisedAllocator(const UninitialisedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) { ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...); }
};
template <class T>
using Buffer = std::vector<T, UninitialisedAllocator<T>>;

// The sources of projection j's synapses onto target t, in synapse order, into `out`; for an
// explicit list, returns the list entries of those synapses (nullptr for the other rules).
// Pairwise: Bernoulli(p) over all candidate sources (s != t) by geometric skips, in increasing
// source order. Fixed total and fixed in-degree: the target's in-degree (drawn, or the constant),
// sources uniform, word i % 4 of block i / 4 of the target's connect stream (drawn 8 blocks at a
// time). Fixed out-degree and lists: the target's slice of the rank's plan (prepare_projection).
const uint64_t* sources_of(const EngineConfig& cfg, const ConnectivityPlan& plan, const Placement& placement,
                           const Key& key, uint32_t j, uint64_t t, std::vector<uint32_t>& words,
                           Buffer<uint64_t>& out) {
  const auto& pr = cfg.projections[j];
  const auto& src = cfg.populations[pr.source];
  switch (pr.rule) {
    case ConnectionRule::fixed_total:
    case ConnectionRule::fixed_indegree: {
      const uint32_t k = pr.rule == ConnectionRule::fixed_total ? plan[j].indegrees[t - cfg.populations[pr.target].first]
                                                                : uint32_t(pr.degree);
      const size_t blocks = (size_t(k) + 3) / 4;
      if (words.size() < 4 * blocks) words.resize(4 * blocks);
      philox4x32_10_series(make_counter(t, Purpose::connect, j, 0, 0), 3, blocks, key, words.data(), blocks);
      out.resize(k);
      for (uint32_t i = 0; i < k; ++i) out[i] = src.first + ((uint64_t(words[(i & 3) * blocks + (i >> 2)]) * src.size) >> 32);
      return nullptr;
    }
    case ConnectionRule::grid: {
      // Synapse i: words 2 (i % 2) and 2 (i % 2) + 1 of block i / 2 of the target's connect stream,
      // the first for the column offset, the second for the source in that column.
      const ColumnGridSpec& grid = *pr.grid;
      const auto& tgt = cfg.populations[pr.target];
      const uint64_t columns = uint64_t(grid.columns_x * grid.columns_y);
      const uint64_t src_per = src.size / columns, tgt_per = tgt.size / columns;
      const int64_t column = int64_t((t - tgt.first) / tgt_per);
      const int64_t x = column % grid.columns_x, y = column / grid.columns_x;
      const uint32_t k = uint32_t(pr.degree);
      const size_t blocks = (size_t(k) + 1) / 2;
      if (words.size() < 4 * blocks) words.resize(4 * blocks);
      philox4x32_10_series(make_counter(t, Purpose::connect, j, 0, 0), 3, blocks, key, words.data(), blocks);
      out.clear();
      out.reserve(k);
      for (uint32_t i = 0; i < k; ++i) {
        const uint64_t u = words[(2 * (i & 1)) * blocks + (i >> 1)], v = words[(2 * (i & 1) + 1) * blocks + (i >> 1)];
        const size_t o = size_t(std::upper_bound(grid.threshold.begin(), grid.threshold.end(), u) - grid.threshold.begin());
        int64_t sx = x + grid.dx[o], sy = y + grid.dy[o];
        if (grid.periodic) {
          sx = ((sx % grid.columns_x) + grid.columns_x) % grid.columns_x;
          sy = ((sy % grid.columns_y) + grid.columns_y) % grid.columns_y;
        } else if (sx < 0 || sx >= grid.columns_x || sy < 0 || sy >= grid.columns_y) {
          continue;
        }
        out.push_back(src.first + uint64_t(sy * grid.columns_x + sx) * src_per + ((v * src_per) >> 32));
      }
      return nullptr;
    }
    case ConnectionRule::fixed_outdegree:
    case ConnectionRule::list: {
      const ProjectionPlan& p = plan[j];
      const uint64_t x = placement.rank_index(t) - p.first_index;
      const uint64_t* first = p.items.data() + p.begin[x];
      const uint64_t m = p.begin[x + 1] - p.begin[x];
      if (pr.rule == ConnectionRule::fixed_outdegree) {
        out.assign(first, first + m);
        return nullptr;
      }
      out.resize(m);
      for (uint64_t i = 0; i < m; ++i) out[i] = src.first + pr.list->sources[first[i]];
      return first;
    }
    case ConnectionRule::pairwise:
      out.clear();
      break;
  }
  const bool self_in_source = !pr.autapses && t >= src.first && t < src.first + src.size;
  const uint64_t candidates = src.size - (self_in_source ? 1 : 0);
  if (pr.probability <= 0 || candidates == 0) return nullptr;
  auto source_of = [&](uint64_t i) {
    const uint64_t g = src.first + i;
    return self_in_source && g >= t ? g + 1 : g;
  };
  if (pr.probability >= 1) {
    for (uint64_t i = 0; i < candidates; ++i) out.push_back(source_of(i));
    return nullptr;
  }
  // The words of the target's connect stream in Stream's order (word i % 4 of block i / 4),
  // drawn 16 blocks at a time with the vector Philox: one block at a time took a third of a
  // pairwise build's instructions.
  constexpr size_t kBlocks = 16;
  if (words.size() < 4 * kBlocks) words.resize(4 * kBlocks);
  uint32_t* batch = words.data();
  uint32_t next_block = 0;
  size_t used = 4 * kBlocks;
  auto uniform = [&] {
    if (used == 4 * kBlocks) {
      philox4x32_10_series(make_counter(t, Purpose::connect, j, 0, next_block), 3, kBlocks, key, batch, kBlocks);
      next_block += kBlocks;
      used = 0;
    }
    const size_t i = used++;
    return to_uniform(batch[(i & 3) * kBlocks + i / 4]);
  };
  const double log_q = std::log1p(-pr.probability);
  double pos = -1;
  while (true) {
    pos += 1.0 + std::floor(std::log(uniform()) / log_q);
    if (pos >= double(candidates)) break;
    out.push_back(source_of(uint64_t(pos)));
  }
  return nullptr;
}

// Weight and delay of synapse `index` of projection j onto t, drawn from the synapse's stream:
// the weight from its first uniform(s) where it is drawn, then the delay where it is drawn (the
// mean weight and the constant delay otherwise). The fast path draws block 0 of every stream at
// once; a draw that was rejected there is replayed here from the start of its stream.
struct SynapseDraw { double weight; uint64_t delay; };

SynapseDraw draw_synapse_slow(const EngineConfig& cfg, const Key& key, uint32_t j, uint64_t t, uint32_t index,
                              const Counter& block0, double floor_steps, double ceil_steps, bool weight_draw,
                              bool delay_draw) {
  const auto& pr = cfg.projections[j];
  Stream stream(key, t, Purpose::synapse, j, index, block0);
  double w = pr.weight_mean;
  if (weight_draw && pr.weight_clip) {
    w = pr.weight_mean + pr.weight_sd * inverse_normal(stream.uniform());
    if (!(w / pr.weight_mean > 0.0)) w = 0.0;
  } else if (weight_draw) {
    do { w = pr.weight_mean + pr.weight_sd * inverse_normal(stream.uniform()); }
    while (!(w / pr.weight_mean > 0.0 && w / pr.weight_mean < 2.0));
  }
  uint64_t d = uint64_t(pr.delay_offset_steps);
  if (!delay_draw) {
  } else if (pr.delay_normal) {
    double y;  // in steps
    do { y = (pr.delay_mean_ms + pr.delay_sd_ms * inverse_normal(stream.uniform())) / cfg.resolution_ms; }
    while (!(y >= floor_steps && y <= ceil_steps));
    d = std::max<uint64_t>(uint64_t(pr.delay_offset_steps), uint64_t(std::llround(std::min(y, 1e6))));
  } else {
    double x;
    do { x = -pr.delay_scale_ms * std::log(stream.uniform()); } while (!(x < pr.delay_cut_ms));
    d = uint64_t(pr.delay_offset_steps) + uint64_t(std::floor(x / pr.delay_step_ms)) * uint64_t(pr.delay_step_steps);
  }
  return {w, d};
}

// Groups each row by delay (stable counting sort: targets stay sorted) and writes the headers.
template <class Vec, class DelayVec>
void group_by_delay(uint64_t N, const std::vector<uint64_t>& row_start, const DelayVec& delay,
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
  if (pr.rule != ConnectionRule::fixed_total) return;
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

namespace {

// The rank-local indices [first, end) of population `pop`'s neurons on `rank`: contiguous, since
// every placement keeps gid order inside a rank.
std::pair<uint64_t, uint64_t> local_range(const Placement& placement, int rank, const PopulationSpec& pop) {
  const uint64_t m = placement.rank_count(rank);
  auto first_at_least = [&](uint64_t gid) {
    uint64_t lo = 0, hi = m;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (placement.rank_gid(rank, mid) < gid) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return {first_at_least(pop.first), first_at_least(pop.first + pop.size)};
}

}  // namespace

// Fixed out-degree: every source's targets are drawn from a stream keyed by the source, so every
// rank draws all N_source * K of them (twice: count, then fill) and keeps those that land on it.
// The threads share the sources in balanced blocks; each counts its hits per local target, and
// the counts of the threads before it (lower sources) place its own, so every target's sources
// come out in increasing source order (draw order within a source) for any decomposition.
void plan_fixed_outdegree(const EngineConfig& cfg, const Placement& placement, int rank, int threads, uint32_t j,
                          ProjectionPlan& out) {
  const auto& pr = cfg.projections[j];
  const auto& src = cfg.populations[pr.source];
  const auto& tgt = cfg.populations[pr.target];
  const auto [lo, hi] = local_range(placement, rank, tgt);
  const uint64_t m = hi - lo, K = pr.degree;
  out.first_index = lo;
  out.begin.assign(m + 1, 0);
  out.items.clear();
  if (m == 0 || K == 0 || src.size == 0) return;
  const Key key = key_from_seed(cfg.seed);
  std::vector<std::vector<uint64_t>> counts(threads);
  std::vector<std::string> errors(threads);
  // Calls hit(target's local index x, source gid) for every drawn target on this rank, sources
  // [s0, s1) in order.
  auto for_local_targets = [&](uint64_t s0, uint64_t s1, std::vector<uint32_t>& words, auto&& hit) {
    const size_t blocks = (size_t(K) + 3) / 4;
    if (words.size() < 4 * blocks) words.resize(4 * blocks);
    for (uint64_t s = src.first + s0; s < src.first + s1; ++s) {
      philox4x32_10_series(make_counter(s, Purpose::outdegree, j, 0, 0), 3, blocks, key, words.data(), blocks);
      for (uint64_t i = 0; i < K; ++i) {
        const uint64_t g = tgt.first + ((uint64_t(words[(i & 3) * blocks + (i >> 2)]) * tgt.size) >> 32);
        if (placement.rank_of(g) == rank) hit(placement.rank_index(g) - lo, s);
      }
    }
  };
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const uint64_t s0 = src.size * uint64_t(t) / uint64_t(threads), s1 = src.size * uint64_t(t + 1) / uint64_t(threads);
    std::vector<uint32_t> words;
    try {
      counts[t].assign(m, 0);
      uint64_t* count = counts[t].data();
      for_local_targets(s0, s1, words, [&](uint64_t x, uint64_t) { ++count[x]; });
    } catch (const std::exception& e) {
      errors[t] = e.what();
    }
#pragma omp barrier
#pragma omp single
    if (std::all_of(errors.begin(), errors.end(), [](const std::string& e) { return e.empty(); })) {
      // Each thread's first slot per target: the synapses of lower targets, then of the
      // threads before it.
      uint64_t offset = 0;
      for (uint64_t x = 0; x < m; ++x) {
        out.begin[x] = offset;
        for (int u = 0; u < threads; ++u) {
          const uint64_t c = counts[u][x];
          counts[u][x] = offset;
          offset += c;
        }
      }
      out.begin[m] = offset;
      try {
        out.items.resize(offset);
      } catch (const std::exception& e) {
        errors[0] = e.what();
      }
    }
    if (std::all_of(errors.begin(), errors.end(), [](const std::string& e) { return e.empty(); })) {
      uint64_t* slot = counts[t].data();
      uint64_t* items = out.items.data();
      try {
        for_local_targets(s0, s1, words, [&](uint64_t x, uint64_t s) { items[slot[x]++] = s; });
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    }
  }
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error(e);
}

// Explicit list: the entries whose target lives on this rank, grouped by target in list order.
void plan_list(const EngineConfig& cfg, const Placement& placement, int rank, uint32_t j, ProjectionPlan& out) {
  const auto& pr = cfg.projections[j];
  const auto& src = cfg.populations[pr.source];
  const auto& tgt = cfg.populations[pr.target];
  if (!pr.list) throw std::invalid_argument("projection " + std::to_string(j) + ": rule 'list' without a list");
  const ConnectionList& list = *pr.list;
  const uint64_t n = list.sources.size();
  if (list.targets.size() != n || (!list.weights.empty() && list.weights.size() != n) ||
      (!list.delay_steps.empty() && list.delay_steps.size() != n))
    throw std::invalid_argument("projection " + std::to_string(j) + ": list arrays of different lengths");
  const auto [lo, hi] = local_range(placement, rank, tgt);
  const uint64_t m = hi - lo;
  out.first_index = lo;
  out.begin.assign(m + 1, 0);
  out.items.clear();
  for (uint64_t e = 0; e < n; ++e) {
    if (list.sources[e] >= src.size || list.targets[e] >= tgt.size)
      throw std::invalid_argument("projection " + std::to_string(j) + ": list entry " + std::to_string(e) +
                                  " names a neuron outside its population");
    if (!list.delay_steps.empty() && int64_t(list.delay_steps[e]) < pr.delay_offset_steps)
      throw std::invalid_argument("projection " + std::to_string(j) + ": list entry " + std::to_string(e) +
                                  " has a delay below the projection's minimum delay");
    const uint64_t g = tgt.first + list.targets[e];
    if (placement.rank_of(g) == rank) ++out.begin[placement.rank_index(g) - lo + 1];
  }
  for (uint64_t x = 0; x < m; ++x) out.begin[x + 1] += out.begin[x];
  out.items.resize(out.begin[m]);
  std::vector<uint64_t> slot(out.begin.begin(), out.begin.end() - 1);
  for (uint64_t e = 0; e < n; ++e) {
    const uint64_t g = tgt.first + list.targets[e];
    if (placement.rank_of(g) == rank) out.items[slot[placement.rank_index(g) - lo]++] = e;
  }
}

double max_abs_weight(const ProjectionSpec& pr) {
  if (pr.list_weights()) return pr.list->max_abs_weight;
  const double m = std::abs(pr.weight_mean);
  if (pr.weight_sd <= 0) return m;
  // Uniforms lie in [2^-33, 1 - 2^-33], so |z| < 6.5.
  return pr.weight_clip ? m + 6.5 * pr.weight_sd : 2.0 * m;
}

namespace {

// The largest delay (steps) projection j can draw; every drawn delay is checked against it.
uint64_t max_delay_steps(const ProjectionSpec& pr, double h) {
  uint64_t d = uint64_t(pr.delay_offset_steps);
  if (pr.list_delays()) {
    for (uint16_t x : pr.list->delay_steps) d = std::max<uint64_t>(d, x);
  } else if (pr.delay_constant) {
  } else if (pr.delay_normal) {  // uniforms lie in [2^-33, 1 - 2^-33]: |z| < 6.5
    double top = (pr.delay_mean_ms + 6.5 * std::abs(pr.delay_sd_ms)) / h;
    if (pr.delay_redraw_above_ms >= 0) top = std::min(top, pr.delay_redraw_above_ms / h);  // draws above are redrawn
    d = std::max<uint64_t>(d, uint64_t(std::llround(std::min(top, 1e6))));
  } else {                       // x < cut
    d += uint64_t(std::floor(pr.delay_cut_ms / pr.delay_step_ms)) * uint64_t(pr.delay_step_steps);
  }
  return d;
}

// Every synapse onto target t (all of `projections`, in order): sources, then weights and delays
// from each synapse's stream. Block 0 of every stream 8 synapses at a time; the central normals
// of the weight's and the delay's uniforms vectorised; tails, rejections and the exponential
// law's logarithm per synapse. Each synapse goes to a callback: pass 1 counts it, pass 2 places it
// (no per-target list in between).
struct TargetDraw {
  std::vector<uint32_t> words, synapse_words;
  Buffer<uint64_t> sources;
  std::vector<double> w;         // this projection's weights and delays (steps), vectorised
  std::vector<int32_t> d;
  std::vector<uint8_t> exact;    // bit 0: drawn again by the per-synapse code (tails, rejections);
                                 // bit 1: its delay, bit 2: its weight (where they are drawn apart)
  std::vector<uint32_t> flagged; // their indices
  // Set by the direct layout where every delay lies within 255 steps of kept_base (the
  // shortest): pass 1 (need_weights false) keeps the delays the per-synapse code drew (minus
  // kept_base, in draw order) and pass 2 takes them back instead of drawing them again: 5.2 % of
  // the microcircuit's synapses, a tail or a rejection each. Only where a delay does not depend
  // on its weight.
  bool keep_delays = false;
  uint64_t kept_base = 0;
  std::vector<uint8_t> kept;
  size_t kept_next = 0;

  // need_weights = false: the weights are left at the mean unless a weight's rejection decides
  // the delay (pass 1 of the direct layout only needs the delays).
  // emit(sources, weights, delays (steps, at most 65535), m, projection, shortest and longest
  // delay) once per projection with its m synapses in order: the callers' loops then run over
  // plain arrays.
  // What one projection's synapses onto a target draw, and how (decided once per projection).
  struct Plan {
    bool weight_draw, delay_draw;  // drawn unless the list gives it (weights, delays) or it is a constant
    bool weight_rejects;           // a weight outside (0, 2 mean) is drawn again
    bool weight_now;               // weights drawn in this pass
    bool apart;                    // weight and delay redrawn apart, the delay kept or reused
    double floor_steps, ceil_steps;
  };

  Plan plan_of(const ProjectionSpec& pr, double h, bool need_weights) const {
    Plan p;
    p.floor_steps = pr.delay_redraw_below_ms >= 0 ? pr.delay_redraw_below_ms / h : double(pr.delay_offset_steps);
    // Normal delays above this are redrawn too (NEST's redraw with a max); 1e300: no bound.
    p.ceil_steps = pr.delay_redraw_above_ms >= 0 ? pr.delay_redraw_above_ms / h : 1e300;
    p.weight_draw = pr.weight_sd > 0 && !pr.list_weights();
    p.delay_draw = !pr.delay_constant && !pr.list_delays();
    // |z| < 6.5 (uniforms in [2^-33, 1 - 2^-33]): no weight is rejected when 6.5 sd stays well
    // inside the mean, so the ratio test can be skipped, and with it the weight when unneeded.
    p.weight_rejects = p.weight_draw && !pr.weight_clip && !(6.5 * pr.weight_sd < 0.999 * std::abs(pr.weight_mean));
    p.weight_now = p.weight_draw && (need_weights || p.weight_rejects);
    p.apart = keep_delays && p.delay_draw && !p.weight_rejects;
    return p;
  }

  // The common case vectorised: central normals, the rounding of the delay, and a flag for
  // every synapse whose draw the per-synapse code must make (about 5 % per normal).
  void central_pass(const ProjectionSpec& pr, double h, size_t m, const Plan& p) {
    auto in_tail = [](double u) { return u < kNormalLow || u > 1.0 - kNormalLow; };
    const uint32_t* wu = synapse_words.data();
    const uint32_t* du = synapse_words.data() + (p.weight_draw ? m : 0);
    const double mean = pr.weight_mean, sd = pr.weight_sd, offset = double(pr.delay_offset_steps);
    double* W = w.data();
    int32_t* D = d.data();
    uint8_t* X = exact.data();
    if (p.weight_now) {
      const bool clip = pr.weight_clip, rejects = p.weight_rejects;
      // Two loops: gcc 12 vectorises neither half when one loop stores both doubles and bytes.
#pragma omp simd
      for (size_t i = 0; i < m; ++i) W[i] = mean + sd * inverse_normal_central(to_uniform(wu[i]));
#pragma omp simd
      for (size_t i = 0; i < m; ++i) {
        const double ratio = W[i] / mean;
        X[i] = uint8_t(5 * (in_tail(to_uniform(wu[i])) | (clip ? !(ratio > 0.0) : rejects && !(ratio > 0.0 && ratio < 2.0))));
      }
    } else {
      std::fill(W, W + m, mean);
      std::fill(X, X + m, uint8_t(0));
    }
    if (p.delay_draw && pr.delay_normal) {
      const double floor_steps = p.floor_steps, ceil_steps = p.ceil_steps;
#pragma omp simd
      for (size_t i = 0; i < m; ++i) {
        const double u = to_uniform(du[i]);
        const double y = (pr.delay_mean_ms + pr.delay_sd_ms * inverse_normal_central(u)) / h;
        const double yc = std::min(y, 1e6), whole = std::trunc(yc);
        D[i] = int32_t(std::max(offset, whole + (yc - whole >= 0.5 ? 1.0 : 0.0)));  // std::llround for y >= 0
        X[i] |= uint8_t(3 * (in_tail(u) | !(y >= floor_steps && y <= ceil_steps)));
      }
    } else if (p.delay_draw) {  // the exponential law: a logarithm each
      for (size_t i = 0; i < m; ++i) {
        const double x = -pr.delay_scale_ms * std::log(to_uniform(du[i]));
        D[i] = int32_t(std::min<uint64_t>(uint64_t(pr.delay_offset_steps) +
                                              uint64_t(std::floor(x / pr.delay_step_ms)) * uint64_t(pr.delay_step_steps),
                                          0x10000));
        X[i] |= uint8_t(3 * !(x < pr.delay_cut_ms));
      }
    } else {
      std::fill(D, D + m, int32_t(std::min<int64_t>(pr.delay_offset_steps, 0x10000)));
    }
  }

  // need_weights = false: the weights are left at the mean unless a weight's rejection decides
  // the delay (pass 1 of the direct layout only needs the delays).
  // emit(sources, weights, delays (steps, at most 65535), m, projection, shortest and longest
  // delay) once per projection with its m synapses in order: the callers' loops then run over
  // plain arrays.
  template <class Emit>
  void draw(const EngineConfig& cfg, const ConnectivityPlan& plan, const Placement& placement, const Key& key,
            const std::vector<uint32_t>& projections, uint64_t t, bool need_weights, Emit&& emit) {
    for (uint32_t j : projections) {
      const auto& pr = cfg.projections[j];
      const uint64_t* entries = sources_of(cfg, plan, placement, key, j, t, words, sources);
      const size_t m = sources.size();
      if (m == 0) continue;
      const Plan p = plan_of(pr, cfg.resolution_ms, need_weights);
      const bool weight_draw = p.weight_draw, delay_draw = p.delay_draw, weight_rejects = p.weight_rejects;
      const bool weight_now = p.weight_now;
      const double floor_steps = p.floor_steps, ceil_steps = p.ceil_steps;
      if (synapse_words.size() < 4 * m) synapse_words.resize(4 * m);
      if (w.size() < m) { w.resize(m); d.resize(m); exact.resize(m); }
      const uint32_t* wu = synapse_words.data();
      const double mean = pr.weight_mean, sd = pr.weight_sd, h = cfg.resolution_ms;
      double* W = w.data();
      int32_t* D = d.data();
      uint8_t* X = exact.data();
      if (weight_draw || delay_draw) philox4x32_10_series(make_counter(t, Purpose::synapse, j, 0, 0), 2, m, key, synapse_words.data(), m);
      central_pass(pr, h, m, p);
      // A rejected delay is drawn again from the stream's next words: the rest of block 0 here
      // (the weight took one word at most, since it was accepted), block 1 on in the slow path.
      // Returns false if block 0 rejected them all.
      auto redraw_delay = [&](size_t i, uint64_t& delay) {
        delay = uint64_t(pr.delay_offset_steps);
        for (uint32_t word = weight_draw ? 1 : 0; word < 4; ++word) {
          const double u = to_uniform(synapse_words[word * m + i]);
          if (pr.delay_normal) {
            const double y = (pr.delay_mean_ms + pr.delay_sd_ms * inverse_normal(u)) / h;
            delay = std::max<uint64_t>(uint64_t(pr.delay_offset_steps), uint64_t(std::llround(std::min(y, 1e6))));
            if (y >= floor_steps && y <= ceil_steps) return true;
          } else {
            const double e = -pr.delay_scale_ms * std::log(u);
            delay = uint64_t(pr.delay_offset_steps) + uint64_t(std::floor(e / pr.delay_step_ms)) * uint64_t(pr.delay_step_steps);
            if (e < pr.delay_cut_ms) return true;
          }
        }
        return false;
      };
      auto slow = [&](size_t i) {
        const Counter block0 = {synapse_words[i], synapse_words[m + i], synapse_words[2 * m + i], synapse_words[3 * m + i]};
        return draw_synapse_slow(cfg, key, j, t, uint32_t(i), block0, floor_steps, ceil_steps, weight_draw, delay_draw);
      };
      auto redraw_weight = [&](size_t i) {  // block 0's first word, clipped at 0 where the law clips
        const double x = mean + sd * inverse_normal(to_uniform(wu[i]));
        return pr.weight_clip && !(x / mean > 0.0) ? 0.0 : x;
      };
      auto redraw = [&](size_t i) {
        double x = mean;
        bool ok = true;
        if (weight_now) {
          x = redraw_weight(i);
          if (weight_rejects) ok = x / mean > 0.0 && x / mean < 2.0;  // never with a clipped law
        }
        uint64_t delay = uint64_t(pr.delay_offset_steps);
        if (ok && delay_draw) ok = redraw_delay(i, delay);
        if (!ok) {
          const SynapseDraw drawn = slow(i);
          x = drawn.weight;
          delay = drawn.delay;
        }
        W[i] = x;
        D[i] = int32_t(std::min<uint64_t>(delay, 0x10000));
      };
      // Apart (no weight rejection: the delay's words do not depend on the weight): the weight
      // where flagged (an accepted one is block 0's first word, in the slow path too), the delay
      // where flagged, or taken back from pass 1.
      auto redraw_apart = [&](size_t i) {
        if (X[i] & 4) W[i] = redraw_weight(i);
        if (!(X[i] & 2)) return;
        if (need_weights) {  // pass 2
          D[i] = int32_t(kept_base + kept[kept_next++]);
          return;
        }
        uint64_t delay;
        if (!redraw_delay(i, delay)) delay = slow(i).delay;
        D[i] = int32_t(std::min<uint64_t>(delay, 0x10000));
        if (delay < kept_base || delay > kept_base + 255) throw std::logic_error("a drawn delay lies outside its law's bounds");
        kept.push_back(uint8_t(delay - kept_base));
      };
      // The flagged ones, one at a time, exactly as drawn without the vector pass; listed first
      // (flagged_indices: about one synapse in ten is flagged, in random places, and a loop over
      // each group's set bits mispredicted its exit).
      if (flagged.size() < m + 8) flagged.resize(m + 8);
      const size_t n_flagged = flagged_indices(X, m, flagged.data());
      if (p.apart) {
        for (size_t k = 0; k < n_flagged; ++k) redraw_apart(flagged[k]);
      } else {
        for (size_t k = 0; k < n_flagged; ++k) redraw(flagged[k]);
      }
      if (entries) {  // an explicit list: its own weight and delay where it gives them
        for (size_t i = 0; i < m; ++i) {
          if (pr.list_weights()) W[i] = pr.list->weights[entries[i]];
          if (pr.list_delays()) D[i] = int32_t(pr.list->delay_steps[entries[i]]);
        }
      }
      const auto [shortest, longest] = delay_bounds(D, m);
      emit(sources.data(), W, D, m, j, shortest, longest);
    }
  }

  static std::pair<uint64_t, uint64_t> delay_bounds(const int32_t* D, size_t m) {
    int32_t shortest = INT32_MAX, longest = 0;  // plain ternaries: gcc 12 left std::min's reduction scalar
    for (size_t i = 0; i < m; ++i) {
      shortest = D[i] < shortest ? D[i] : shortest;
      longest = D[i] > longest ? D[i] : longest;
    }
    if (longest > 0xFFFF) throw std::runtime_error("a delay exceeds 65535 steps: use a coarser resolution_ms");
    return {uint64_t(shortest), uint64_t(longest)};
  }
};

// The synapses projection j is expected to give a range of a thread's targets: exact for every
// rule but the pairwise one (its mean).
double expected_synapses(const EngineConfig& cfg, const ConnectivityPlan& plan, const Placement& placement,
                         uint32_t j, const ThreadNeurons& neurons, const PopulationRange& range) {
  const auto& pr = cfg.projections[j];
  const auto& tgt = cfg.populations[pr.target];
  double n = 0;
  for (uint64_t k = range.begin; k < range.end; ++k) {
    const uint64_t t = neurons.gid[k];
    switch (pr.rule) {
      case ConnectionRule::fixed_total: n += plan[j].indegrees[t - tgt.first]; break;
      case ConnectionRule::fixed_indegree: n += double(pr.degree); break;
      case ConnectionRule::grid: n += double(pr.degree); break;   // at most (an open grid drops draws off its edge)
      case ConnectionRule::fixed_outdegree:
      case ConnectionRule::list: {
        const uint64_t x = placement.rank_index(t) - plan[j].first_index;
        n += double(plan[j].begin[x + 1] - plan[j].begin[x]);
        break;
      }
      case ConnectionRule::pairwise: n += pr.probability * double(cfg.populations[pr.source].size); break;
    }
  }
  return n;
}

// The direct layout's table of (source, delay) cells: used where it stays small next to the
// synapses themselves (at most this many cells per thread), else rows are grouped by delay after.
constexpr uint64_t kMaxDelayCells = uint64_t(1) << 24;

// One thread's build of one store (build_thread_synapses): what it draws from, the projections
// it draws (by target population), the range of delays they can draw and the layout chosen.
struct StoreBuild {
  const EngineConfig& cfg;
  const Placement& placement;
  const ConnectivityPlan& plan;
  const ThreadNeurons& neurons;
  Key key;
  double scale;                                // fixed-point units per weight unit
  bool plastic;                                // one plastic projection, else every static one
  uint64_t N;                                  // global neurons: the sources
  std::vector<std::vector<uint32_t>> into;     // projections by target population
  uint64_t d_min = 0, d_max = 0, delays = 1;   // delays (steps) they can draw, and how many
  bool direct = false;                         // the direct layout, else the grouped one
  uint64_t cells() const { return direct ? N * delays : N; }
};

using CellCounts = std::vector<uint32_t, HugePageAllocator<uint32_t>>;  // counts, then cursors

// Picks the store's projections and its layout. Direct where its (source, delay) table holds
// less than the delays it saves (4-byte cells against 2 bytes per synapse) and its second draw
// is cheap: not with the exponential delay law, whose logarithm per synapse made dpsnn's build
// twice as long.
void choose_layout(StoreBuild& b, int plastic_projection) {
  const EngineConfig& cfg = b.cfg;
  b.into.assign(cfg.populations.size(), {});
  uint64_t d_min = UINT64_MAX, d_max = 0;
  for (uint32_t j = 0; j < cfg.projections.size(); ++j)
    if (b.plastic ? int(j) == plastic_projection : !cfg.projections[j].plastic()) {
      b.into[cfg.projections[j].target].push_back(j);
      d_min = std::min<uint64_t>(d_min, uint64_t(std::max<int64_t>(cfg.projections[j].delay_offset_steps, 0)));
      d_max = std::max(d_max, max_delay_steps(cfg.projections[j], cfg.resolution_ms));
    }
  const uint64_t delays = d_max >= d_min ? d_max - d_min + 1 : 1;
  double expected = 0;
  bool exponential = false;
  for (const auto& range : b.neurons.ranges)
    for (uint32_t j : b.into[range.population]) {
      const auto& pr = cfg.projections[j];
      exponential |= !pr.delay_constant && !pr.list_delays() && !pr.delay_normal;
      expected += expected_synapses(cfg, b.plan, b.placement, j, b.neurons, range);
    }
  const uint64_t N = b.N;
  b.direct = d_max <= 0xFFFF && N * delays <= kMaxDelayCells && 4.0 * double(N * delays) <= 2.0 * expected &&
             !exponential && !cfg.grouped_build;
  b.d_min = d_min == UINT64_MAX ? 0 : d_min;
  b.d_max = d_max;
  b.delays = delays;
}

// Pass 1 of the direct layout: every synapse drawn and counted in its (source, delay) cell, at
// index cell + 1 (the prefix sum then turns the counts into cursors). Counted in 8 bits: the
// pass waits on the table (the full-scale microcircuit's 77,169 sources x 64 delays, 5 MB a
// thread in 8 bits, 20 MB in 32: with two threads, past a 32 MB L3). A counter that wraps to 0
// lists its cell, and each listing adds 256 after.
CellCounts count_direct(const StoreBuild& b, TargetDraw& td) {
  const uint64_t delays = b.delays, d_min = b.d_min, d_max = b.d_max;
  std::vector<uint8_t, HugePageAllocator<uint8_t>> count(b.cells() + 1, 0);
  std::vector<uint32_t> wrapped;  // cells (below kMaxDelayCells + 1) whose counter wrapped
  uint8_t* table = count.data();
  for (const auto& range : b.neurons.ranges)
    for (uint64_t k = range.begin; k < range.end; ++k)
      td.draw(b.cfg, b.plan, b.placement, b.key, b.into[range.population], b.neurons.gid[k], false,
              [&](const uint64_t* source, const double*, const int32_t* d, size_t m, uint32_t, uint64_t shortest,
                  uint64_t longest) {
                if (shortest < d_min || longest > d_max) throw std::logic_error("a drawn delay lies outside its law's bounds");
                // Cell (source, delay) counts at source * delays + delay - d_min + 1 (unsigned wrap).
                const uint64_t shift = 1 - d_min;
                // The table is megabytes: its counters are fetched ahead (128: the build's best on a
                // Zen 5; on a Zen 3 longer distances than 16 measured no different).
                constexpr size_t kAhead = 128;
                for (size_t i = 0; i < m; ++i) {
                  if (i + kAhead < m) __builtin_prefetch(&table[source[i + kAhead] * delays + uint64_t(d[i + kAhead]) + shift], 1);
                  const uint64_t c = source[i] * delays + uint64_t(d[i]) + shift;
                  if (__builtin_expect(++table[c] == 0, 0)) wrapped.push_back(uint32_t(c));
                }
              });
  CellCounts fill(count.begin(), count.end());
  for (uint32_t c : wrapped) {
    if (fill[c] > UINT32_MAX - 256) throw std::runtime_error("more than 2^32 synapses on one thread: use more threads or ranks");
    fill[c] += 256;
  }
  return fill;
}

// Pass 1 of the grouped layout: synapses counted per source, at index source + 1, from their
// sources alone (no weight or delay is drawn).
CellCounts count_grouped(const StoreBuild& b) {
  CellCounts fill(b.cells() + 1, 0);
  Buffer<uint64_t> sources;
  std::vector<uint32_t> words;
  for (const auto& range : b.neurons.ranges)
    for (uint64_t k = range.begin; k < range.end; ++k)
      for (uint32_t j : b.into[range.population]) {
        sources_of(b.cfg, b.plan, b.placement, b.key, j, b.neurons.gid[k], words, sources);
        for (uint64_t src : sources) ++fill[src + 1];
      }
  return fill;
}

// The counts become each cell's first place in the store (pass 2's cursors); returns the total.
uint64_t counts_to_cursors(CellCounts& fill) {
  uint64_t total = 0;
  for (uint64_t c = 0; c < fill.size(); ++c) {
    total += fill[c];
    if (total >= (uint64_t(1) << 32)) throw std::runtime_error("more than 2^32 synapses on one thread: use more threads or ranks");
    fill[c] = uint32_t(total);
  }
  return total;
}

// The direct layout's segment headers, from the cursors before pass 2 moves them: the non-empty
// (source, delay) cells, row by row.
void write_direct_segments(const StoreBuild& b, const CellCounts& fill, uint64_t total, SynapseStore& out) {
  const uint64_t N = b.N, delays = b.delays;
  out.row_head.assign(N + 1, 0);
  out.seg_first.clear();
  out.seg_delay.clear();
  for (uint64_t s = 0; s < N; ++s) {
    out.row_head[s] = uint32_t(out.seg_first.size());
    for (uint64_t d = 0; d < delays; ++d) {
      const uint64_t c = s * delays + d;
      if (fill[c + 1] == fill[c]) continue;
      out.seg_first.push_back(uint32_t(fill[c]));
      out.seg_delay.push_back(uint16_t(b.d_min + d));
    }
  }
  out.row_head[N] = uint32_t(out.seg_first.size());
  out.seg_first.push_back(uint32_t(total));
  out.seg_first.shrink_to_fit();
  out.seg_delay.shrink_to_fit();
}

// Sizes the store for `total` synapses: packed when every local index and every weight this
// thread can draw fit in 32 bits (never for a plastic projection: its weight field holds an index).
void size_store(const StoreBuild& b, uint64_t total, SynapseStore& out) {
  int bits = 1;
  while ((uint64_t(1) << bits) < b.neurons.input_columns) ++bits;
  double bound = 0;
  for (const auto& range : b.neurons.ranges)
    for (uint32_t j : b.into[range.population])
      bound = std::max(bound, std::rint(max_abs_weight(b.cfg.projections[j]) * b.scale));
  out.target_bits = !b.plastic && bits < 32 && bound < std::ldexp(1.0, 31 - bits) - 1 ? bits : 0;
  out.synapses.clear();
  out.packed.clear();
  if (out.is_packed()) out.packed.resize(total);
  else out.synapses.resize(total);
}

// One target's synapses in pass 2, in draw order, before they are placed: each one's cell, its
// weight (fixed point, or the index of a plastic weight), whether it goes to the inhibitory
// column, its delay (grouped layout only) and its stored word (packed: weight << bits | column).
struct TargetSynapses {
  Buffer<uint64_t> cell;
  Buffer<int32_t> weight;
  Buffer<uint8_t> port;        // the target's input column: 0, 1 (inhibitory) or the receptor
  Buffer<uint16_t> delay;
  Buffer<uint32_t> word;
};

// Pass 2's draw of every synapse onto target t (the projections `into` it) into `p`; returns
// their number and raises max_delay to the longest delay drawn. A plastic projection's weights
// go, unrounded, to plastic_weights (plasticity changes them from there), the others' are
// rounded to fixed point.
size_t gather_target(const StoreBuild& b, TargetDraw& td, const std::vector<uint32_t>& into, uint64_t t,
                     TargetSynapses& p, uint64_t& max_delay, std::vector<double>* plastic_weights) {
  const EngineConfig& cfg = b.cfg;
  const bool direct = b.direct, plastic = b.plastic;
  const uint64_t delays = b.delays, d_min = b.d_min;
  const double scale = b.scale;
  size_t n = 0;
  td.draw(cfg, b.plan, b.placement, b.key, into, t, true,
          [&](const uint64_t* source, const double* W, const int32_t* D, size_t m, uint32_t j, uint64_t,
              uint64_t longest) {
    const auto& pr = cfg.projections[j];
    p.cell.resize(n + m);
    p.weight.resize(n + m);
    p.port.resize(n + m);
    if (!direct) p.delay.resize(n + m);
    uint64_t* cell = p.cell.data() + n;
    int32_t* weight = p.weight.data() + n;
    uint8_t* port = p.port.data() + n;
    max_delay = std::max(max_delay, longest);
    if (direct) {
      for (size_t i = 0; i < m; ++i) cell[i] = source[i] * delays + (uint64_t(D[i]) - d_min);
    } else {
      std::copy(source, source + m, cell);
      for (size_t i = 0; i < m; ++i) p.delay[n + i] = uint16_t(D[i]);
    }
    if (plastic) {
      if (plastic_weights->size() + m > (uint64_t(1) << 31))
        throw std::runtime_error("more than 2^31 plastic synapses of one projection on one thread: use more threads or ranks");
      const SynapseRule& rule = synapse_rule(pr.plasticity.rule);
      const bool split = rule.negative && rule.negative(pr.plasticity);
      const uint8_t to = pr.receptor >= 0 ? uint8_t(pr.receptor) : uint8_t(split);
      for (size_t i = 0; i < m; ++i) {
        weight[i] = int32_t(plastic_weights->size());
        port[i] = to;
        plastic_weights->push_back(W[i]);
      }
    } else if (pr.receptor >= 0) {
      const uint8_t to = uint8_t(pr.receptor);
      for (size_t i = 0; i < m; ++i) {
        weight[i] = int32_t(std::rint(W[i] * scale));
        port[i] = to;
      }
    } else {
#pragma omp simd
      for (size_t i = 0; i < m; ++i) {
        const int32_t fixed = int32_t(std::rint(W[i] * scale));
        weight[i] = fixed;
        port[i] = fixed < 0;
      }
    }
    n += m;
  });
  return n;
}

// Writes one target's n synapses at their cells' cursors, advancing them (and, grouped, each
// one's delay beside it). The cursors are fetched two groups ahead, the destinations one group
// ahead; the cell list is padded with cell 0 so that the loop needs no bounds checks, and the
// loop is compiled once per store layout. A group of 64: the microcircuit's build 3.78 -> 3.54 s
// against 16 on a Zen 5 (on a Zen 3, cursors 64-128 and destinations 32-48 ahead measured no
// different). Each synapse adds into the target's column of its port (`column`: split input's
// inhibitory column 1, or the projection's receptor).
void place_target(bool direct, TargetSynapses& p, size_t n, const uint32_t* column, CellCounts& fill,
                  std::vector<uint16_t>& delay, SynapseStore& out) {
  const bool packed = out.is_packed();
  if (packed) {
    const int bits = out.target_bits;
    p.word.resize(n);
    for (size_t i = 0; i < n; ++i) p.word[i] = (uint32_t(p.weight[i]) << bits) | column[p.port[i]];
  }
  constexpr size_t kAhead = 64;
  p.cell.resize(n + 2 * kAhead);
  std::fill(p.cell.begin() + n, p.cell.end(), 0);
  const uint64_t* cell = p.cell.data();
  uint32_t* cursor = fill.data();
  auto place = [&](auto* store, auto&& value_of, auto grouped) {
    for (size_t i = 0; i < n; ++i) {
      __builtin_prefetch(&cursor[cell[i + 2 * kAhead]], 1);
      const uint64_t ahead = cursor[cell[i + kAhead]];
      __builtin_prefetch(store + ahead, 1);
      if constexpr (grouped) __builtin_prefetch(&delay[ahead], 1);
      const uint64_t pos = cursor[cell[i]]++;
      store[pos] = value_of(i);
      if constexpr (grouped) delay[pos] = p.delay[i];
    }
  };
  auto place_in = [&](auto* store, auto&& value_of) {
    if (direct) place(store, value_of, std::false_type{});
    else place(store, value_of, std::true_type{});
  };
  if (packed) {
    place_in(out.packed.data(), [&](size_t i) { return p.word[i]; });
  } else {
    place_in(out.synapses.data(), [&](size_t i) {
      return Synapse{column[p.port[i]], p.weight[i]};
    });
  }
}

}  // namespace

// Two layouts of the same build, which produce the same store: each source's row holds its
// segments by increasing delay, each segment its synapses by increasing target (targets are
// visited in increasing order, and each target's synapses in draw order).
// - Direct (small networks x delay ranges): pass 1 draws every synapse and counts it in its
//   (source, delay) cell; pass 2 draws them again and writes each at its final place. Nothing
//   per synapse but the store itself is held (the delays are not kept).
// - Grouped (otherwise): pass 1 counts synapses per source from the sources alone; pass 2 places
//   each in its source row and keeps its delay beside it; each row is then grouped by delay.
// The stores are placed at random across the whole array, so each pass 2 prefetches the
// destinations a few synapses ahead and the arrays use huge pages (TLB misses otherwise).
void build_thread_synapses(const EngineConfig& cfg, const Placement& placement, const ConnectivityPlan& plan,
                           const ThreadNeurons& neurons, SynapseStore& out, int plastic_projection,
                           std::vector<double>* plastic_weights) {
  StoreBuild b{cfg, placement, plan, neurons, key_from_seed(cfg.seed), std::ldexp(1.0, cfg.fraction_bits),
               plastic_projection >= 0, cfg.neuron_count(), {}};
  choose_layout(b, plastic_projection);
  if (b.plastic) plastic_weights->clear();
  TargetDraw td;
  // Pass 2 takes back the delays pass 1 redrew where they fit a byte above the shortest.
  td.keep_delays = b.direct && b.d_max - b.d_min <= 255;
  td.kept_base = b.d_min;

  // Pass 1: count synapses per cell, (source, delay) or source; then each cell's cursor.
  CellCounts fill = b.direct ? count_direct(b, td) : count_grouped(b);
  const uint64_t total = counts_to_cursors(fill);
  std::vector<uint64_t> row_start;
  if (b.direct) write_direct_segments(b, fill, total, out);
  else row_start.assign(fill.begin(), fill.end());

  // Pass 2: draw again, place each synapse.
  size_store(b, total, out);
  std::vector<uint16_t> delay(b.direct ? 0 : total);
  uint64_t max_delay = 0;
  TargetSynapses p;
  for (const auto& range : neurons.ranges)
    for (uint64_t k = range.begin; k < range.end; ++k) {
      const size_t n = gather_target(b, td, b.into[range.population], neurons.gid[k], p, max_delay, plastic_weights);
      // Without further columns every port is column k (a model that does not split its input).
      uint32_t column[kMaxReceptors];
      for (uint32_t port = 0; port < uint32_t(kMaxReceptors); ++port)
        column[port] = uint32_t(port < range.input_columns ? range.column(k, port) : k);
      place_target(b.direct, p, n, column, fill, delay, out);
    }

  CellCounts().swap(fill);
  if (td.kept_next != td.kept.size()) throw std::logic_error("pass 2 took back a different number of delays than pass 1 kept");
  if (b.direct) return;
  if (out.is_packed()) group_by_delay(b.N, row_start, delay, max_delay, out.packed, out);
  else group_by_delay(b.N, row_start, delay, max_delay, out.synapses, out);
}

}  // namespace ranvier
