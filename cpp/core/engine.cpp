#include "core/engine.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/philox.hpp"
#include "neurons/neuron_model.hpp"
#if defined(__x86_64__)
#include <immintrin.h>  // also for the AVX-512 kernels, compiled by target attribute in any build
#endif

namespace ranvier {

namespace {
#if defined(RANVIER_HAVE_AVX512_KERNELS)
// The drive's events 0-2 of m neurons, slot by slot, as (neuron, word) pairs: word j + 1 of
// block 0 for the neurons whose count exceeds j. Returns how many were listed.
RANVIER_AVX512 size_t list_events_avx512(const uint32_t* __restrict count, const uint32_t* __restrict words, uint64_t m,
                                         uint32_t* __restrict ev_neuron, uint32_t* __restrict ev_word) {
  size_t n = 0;
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (uint32_t j = 0; j < 3; ++j) {
    const __m512i slot = _mm512_set1_epi32(int(j));
    const uint32_t* wj = words + (j + 1) * m;
    uint64_t i = 0;
    for (; i + 16 <= m; i += 16) {
      const __mmask16 has = _mm512_cmpgt_epu32_mask(_mm512_loadu_si512(count + i), slot);
      // Compress in registers and store all 16 lanes (the lists have room): a compress straight
      // to memory is microcoded and slow on some CPUs (AMD Zen 4).
      _mm512_storeu_si512(ev_neuron + n, _mm512_maskz_compress_epi32(has, _mm512_add_epi32(_mm512_set1_epi32(int(i)), lane)));
      _mm512_storeu_si512(ev_word + n, _mm512_maskz_compress_epi32(has, _mm512_loadu_si512(wj + i)));
      n += size_t(__builtin_popcount(has));
    }
    for (; i < m; ++i)
      if (count[i] > j) { ev_neuron[n] = uint32_t(i); ev_word[n] = wj[i]; ++n; }
  }
  return n;
}
#endif

// Poisson counts of m words against a table's thresholds (PoissonTable::thresholds), capped at
// kCounts; returns whether any count reached the cap (the caller then draws those exactly).
constexpr uint32_t kCounts = PoissonTable::kCounted;

#if defined(RANVIER_HAVE_AVX512_KERNELS)
// poisson_counts, 16 neurons per instruction (unsigned compares into masks).
RANVIER_AVX512 uint64_t poisson_counts_avx512(const uint32_t* __restrict w, uint64_t m, const uint32_t* T,
                                              uint32_t* __restrict count, bool& saturated) {
  const __m512i cap = _mm512_set1_epi32(int(0xFFFFFFFEu)), one = _mm512_set1_epi32(1);
  __m512i thr[kCounts];
  for (uint32_t j = 0; j < kCounts; ++j) thr[j] = _mm512_set1_epi32(int(T[j]));
  __mmask16 any = 0;
  uint64_t i = 0;
  for (; i + 16 <= m; i += 16) {
    const __m512i word = _mm512_min_epu32(_mm512_loadu_si512(w + i), cap);
    __m512i c = _mm512_setzero_si512();
    for (uint32_t j = 0; j < kCounts; ++j) c = _mm512_mask_add_epi32(c, _mm512_cmpge_epu32_mask(word, thr[j]), c, one);
    _mm512_storeu_si512(count + i, c);
    any |= _mm512_cmpeq_epi32_mask(c, _mm512_set1_epi32(int(kCounts)));
  }
  saturated = any != 0;
  return i;
}

#endif

bool poisson_counts(const uint32_t* __restrict w, uint64_t m, const uint32_t* T, uint32_t* __restrict count) {
  uint64_t i = 0;
  bool saturated = false;
#if defined(RANVIER_HAVE_AVX512_KERNELS)
  if (avx512_kernels()) i = poisson_counts_avx512(w, m, T, count, saturated);
#endif
#if defined(__AVX2__)
  const __m256i cap = _mm256_set1_epi32(int(0xFFFFFFFEu)), full = _mm256_set1_epi32(kCounts);
  __m256i any = _mm256_setzero_si256();
  __m256i thr[kCounts];
  for (uint32_t j = 0; j < kCounts; ++j) thr[j] = _mm256_set1_epi32(int(T[j]));
  for (; i + 8 <= m; i += 8) {
    const __m256i word = _mm256_min_epu32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i)), cap);
    __m256i c = _mm256_setzero_si256();
    for (uint32_t j = 0; j < kCounts; ++j)  // word >= T[j] <=> max(word, T[j]) == word; true is -1
      c = _mm256_sub_epi32(c, _mm256_cmpeq_epi32(_mm256_max_epu32(word, thr[j]), word));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(count + i), c);
    any = _mm256_or_si256(any, _mm256_cmpeq_epi32(c, full));
  }
  saturated |= !_mm256_testz_si256(any, any);
#endif
  for (; i < m; ++i) {
    const uint32_t word = std::min(w[i], 0xFFFFFFFEu);
    uint32_t c = 0;
    for (uint32_t j = 0; j < kCounts; ++j) c += word >= T[j];
    count[i] = c;
    saturated |= c == kCounts;
  }
  return saturated;
}

// One external event from one 32-bit word w: w * L splits into the step offset within the cycle
// (high 32 bits) and a uniform for the Gaussian efficacy (low 32 bits).
inline uint64_t event_offset(uint32_t word, uint64_t L) { return (uint64_t(word) * L) >> 32; }
inline double event_uniform(uint32_t word, uint64_t L) { return to_uniform(uint32_t(uint64_t(word) * L)); }
inline bool in_normal_tail(double p) { return p < kNormalLow || p > 1.0 - kNormalLow; }
inline int32_t to_fixed(double mean, double sd, double z, double scale) { return int32_t(std::rint((mean + sd * z) * scale)); }

// An event's efficacy from the central part of the inverse normal, which vectorises; events
// whose uniform lies in a tail (in_normal_tail) take tail_efficacy instead.
inline int32_t central_efficacy(uint32_t word, uint64_t L, double mean, double sd, double scale) {
  return to_fixed(mean, sd, inverse_normal_central(event_uniform(word, L)), scale);
}

inline int32_t tail_efficacy(uint32_t word, uint64_t L, double mean, double sd, double scale) {
  return to_fixed(mean, sd, inverse_normal(event_uniform(word, L)), scale);
}

// The drive's events, vectorised: each event's efficacy from the central normal, its place in
// the input buffer (step row and neuron), and whether its uniform lies in a normal tail
// (tail[i]; those few, about 5 %, are fixed by the caller with tail_efficacy).
inline void event_terms_body(const uint32_t* __restrict words, const uint32_t* __restrict neuron, uint64_t m,
                             uint64_t L, uint64_t stride, double mean, double sd, double scale,
                             int32_t* __restrict weight, uint32_t* __restrict at, uint8_t* __restrict tail) {
#pragma omp simd
  for (uint64_t i = 0; i < m; ++i) {
    weight[i] = central_efficacy(words[i], L, mean, sd, scale);
    at[i] = uint32_t(event_offset(words[i], L) * stride) + neuron[i];
    tail[i] = in_normal_tail(event_uniform(words[i], L));
  }
}

#if defined(RANVIER_HAVE_AVX512_KERNELS)
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi2,prefer-vector-width=512")))
void event_terms_avx512(const uint32_t* __restrict words, const uint32_t* __restrict neuron, uint64_t m, uint64_t L,
                        uint64_t stride, double mean, double sd, double scale, int32_t* __restrict weight,
                        uint32_t* __restrict at, uint8_t* __restrict tail) {
  event_terms_body(words, neuron, m, L, stride, mean, sd, scale, weight, at, tail);
}
#endif

// Fills weight, at and tail for m events; returns the indices of the tail events in `tails`
// (branch-free appends) and their number.
size_t event_terms(const uint32_t* __restrict words, const uint32_t* __restrict neuron, uint64_t m, uint64_t L,
                   uint64_t stride, double mean, double sd, double scale, int32_t* __restrict weight,
                   uint32_t* __restrict at, uint8_t* __restrict tail, uint32_t* __restrict tails) {
#if defined(RANVIER_HAVE_AVX512_KERNELS)
  if (avx512_kernels()) event_terms_avx512(words, neuron, m, L, stride, mean, sd, scale, weight, at, tail);
  else
#endif
  event_terms_body(words, neuron, m, L, stride, mean, sd, scale, weight, at, tail);
  size_t n = 0;
  for (uint64_t i = 0; i < m; ++i) {
    tails[n] = uint32_t(i);
    n += tail[i];
  }
  return n;
}

Placement make_placement(const EngineConfig& cfg, int ranks) {
  if (cfg.placement != "segments") return Placement(cfg.placement, cfg.neuron_count(), ranks, cfg.threads);
  if (cfg.placement_bounds.empty() || cfg.placement_bounds.back() != cfg.neuron_count())
    throw std::invalid_argument("placement segments must cover every neuron: their bounds must end at the neuron count");
  return Placement(cfg.placement_bounds, cfg.placement_ranks, ranks, cfg.threads);
}
}  // namespace

Engine::Engine(EngineConfig cfg)
    : cfg_(std::move(cfg)),
      comm_(make_communicator(cfg_.use_mpi, cfg_.comm_handle)),
      placement_(make_placement(cfg_, comm_->size())),
      exchange_(make_exchange(cfg_.exchange)) {
  if (cfg_.threads < 1) throw std::invalid_argument("threads must be at least 1");
  if (cfg_.steps_per_cycle < 1 || cfg_.steps_per_cycle > 0xFFFF)
    throw std::invalid_argument("steps_per_cycle must lie in [1, 65535]");
  if (cfg_.drive_steps == 0) cfg_.drive_steps = cfg_.steps_per_cycle;
  if (cfg_.drive_steps < 1 || cfg_.drive_steps % cfg_.steps_per_cycle)
    throw std::invalid_argument("drive_steps must be a positive multiple of steps_per_cycle");
  const int64_t reach = cfg_.overlap ? 2 * cfg_.steps_per_cycle : cfg_.steps_per_cycle;
  for (const auto& pr : cfg_.projections)
    if (pr.delay_offset_steps < reach)
      throw std::invalid_argument(cfg_.overlap ? "with overlap, the communication interval must be at most half the minimum delay"
                                               : "a projection's minimum delay is shorter than the communication interval");
  for (const auto& p : cfg_.populations) neuron_model(p.kind).check(p);
  if (two_tier()) {
    // The global pathway holds a spike for up to D cycles, so every synapse between ranks of
    // different area groups, all of them between areas, must be at least D cycles long.
    if (cfg_.overlap) throw std::invalid_argument("the two-tier exchange does not combine with overlap");
    for (const auto& p : cfg_.populations)
      if (p.area < 0)
        throw std::invalid_argument("the two-tier exchange needs every population in an area; population '" + p.name +
                                    "' has none");
    const int64_t D = cfg_.global_interval, L = cfg_.steps_per_cycle;
    if (D * L > 0xFFFF) throw std::invalid_argument("two-tier: global_interval * steps_per_cycle must not exceed 65535 steps");
    for (const auto& pr : cfg_.projections) {
      if (cfg_.populations[pr.source].area == cfg_.populations[pr.target].area) continue;
      if (pr.delay_offset_steps < D * L)
        throw std::invalid_argument(
            "two-tier: the global exchange every D = " + std::to_string(D) + " cycles of " + std::to_string(L) +
            " step(s) would deliver spikes late: the shortest inter-area delay (" + cfg_.populations[pr.source].name +
            " -> " + cfg_.populations[pr.target].name + ") is " + std::to_string(pr.delay_offset_steps) +
            " step(s), and D must divide it into whole cycles of at least D: choose D <= " +
            std::to_string(pr.delay_offset_steps / L));
    }
  }
  std::vector<int> drives(cfg_.populations.size(), 0);
  for (const auto& d : cfg_.drives)
    if (d.target >= drives.size() || ++drives[d.target] > 1)
      throw std::invalid_argument("each population takes at most one Poisson drive");
}

Engine::~Engine() = default;

void Engine::build() {
  const int T = cfg_.threads;
  threads_.clear();
  threads_.resize(T);
  const int64_t L = cfg_.steps_per_cycle;
  std::vector<std::string> errors(T);
  // In-degrees of fixed-total projections: every rank draws them all (one sequence per
  // projection), the threads sharing out the projections.
  InDegrees indegrees(cfg_.projections.size());
#pragma omp parallel for num_threads(T) schedule(dynamic)
  for (size_t j = 0; j < cfg_.projections.size(); ++j) {
    try {
      draw_indegrees(cfg_, uint32_t(j), indegrees[j]);
    } catch (const std::exception& e) {
      errors[omp_get_thread_num()] = e.what();
    }
  }
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error(e);
#pragma omp parallel num_threads(T)
  {
    const int t = omp_get_thread_num();
    try {
      ThreadState& ts = threads_[t];
      build_thread_neurons(cfg_, placement_, rank(), t, ts.neurons);
      build_thread_synapses(cfg_, indegrees, ts.neurons, ts.store);
      // Rows padded by one cache line and never a multiple of 4 KiB apart: rows of the input
      // buffer otherwise map to the same cache sets and evict each other.
      ts.input_stride = (ts.neurons.size() + 15) / 16 * 16 + 16;
      ts.input.assign(size_t(cfg_.drive_steps) * ts.input_stride, 0);
      ts.fired.assign(ts.neurons.size() + 8, 0);
      ts.fixed_drive_words.assign(cfg_.drives.size(), {});
      ts.fixed_drive_group.assign(cfg_.drives.size(), 0);
      // One update per population range, its kernel chosen here once.
      const ModelContext context{cfg_.resolution_ms, key_from_seed(cfg_.seed), neuron_simd_level()};
      ts.updates.clear();
      for (const auto& range : ts.neurons.ranges) {
        const PopulationSpec& pop = cfg_.populations[range.population];
        ts.updates.push_back(neuron_model(pop.kind).make_update(pop, context));
      }
    } catch (const std::exception& e) {
      errors[t] = e.what();
    }
  }
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error(e);

  // Delivery queues: a ring long enough for the longest delay on this rank, counted from the
  // start of the longest window a record's offset can refer to (D cycles with two-tier).
  const int64_t window = two_tier() ? L * cfg_.global_interval : L;
  uint64_t max_delay = uint64_t(L);
  for (const auto& ts : threads_)
    for (uint16_t d : ts.store.seg_delay) max_delay = std::max<uint64_t>(max_delay, d);
  queue_cycles_ = int64_t((window - 1 + max_delay) / L + 1);
  // Cycles ahead and step offset of arrival for every (offset + delay): no division per segment.
  arrival_.resize(window + max_delay);
  for (uint64_t a = 0; a < arrival_.size(); ++a) arrival_[a] = {uint32_t(a / L), uint32_t(a % L)};
  for (auto& ts : threads_) ts.queue.assign(queue_cycles_ * L, {});

  // External events per neuron and cycle: one table per population (one drive each).
  poisson_.assign(cfg_.populations.size(), PoissonTable());
  for (const auto& d : cfg_.drives)
    poisson_[d.target] = PoissonTable(double(d.n_synapses) * d.rate_hz * 1e-3 * cfg_.resolution_ms * cfg_.drive_steps);

  // State recorder: which thread holds each traced neuron.
  traced_ids_.clear();
  for (uint64_t g : cfg_.record_state) {
    const Location loc = placement_.locate(g);
    if (loc.rank != rank()) continue;
    threads_[loc.thread].traced.push_back({loc.index, traced_ids_.size()});
    traced_ids_.push_back(g);
  }

  if (two_tier()) {
    build_area_groups();
    build_target_table();
    global_exchange_ = make_exchange(cfg_.exchange);
    exchange_->configure(*group_comm_, *group_placement_, targets_, uint32_t(L));
    global_exchange_->configure(*comm_, placement_, global_targets_, uint32_t(window));
  } else {
    build_target_table();
    exchange_->configure(*comm_, placement_, targets_, uint32_t(L));
  }
}

// Area groups: ranks that hold neurons of one area are joined, transitively (union-find over
// ranks). Each group gets a sub-communicator for the exchange every cycle; everything leaving
// the group then crosses an area boundary, whose delays allow the global exchange every D cycles.
void Engine::build_area_groups() {
  const int P = comm_->size();
  std::vector<int> parent(P);
  for (int r = 0; r < P; ++r) parent[r] = r;
  auto root = [&](int r) {
    while (parent[r] != r) r = parent[r] = parent[parent[r]];
    return r;
  };
  std::vector<int> first_rank_of_area;
  for (const auto& p : cfg_.populations) {
    if (size_t(p.area) >= first_rank_of_area.size()) first_rank_of_area.resize(p.area + 1, -1);
    for (int r : placement_.ranks_of_range(p.first, p.size)) {
      int& first = first_rank_of_area[p.area];
      if (first < 0) first = r;
      const int a = root(first), b = root(r);
      parent[std::max(a, b)] = std::min(a, b);
    }
  }
  group_of_rank_.resize(P);
  for (int r = 0; r < P; ++r) group_of_rank_[r] = root(r);
  std::vector<int> members;
  for (int r = 0; r < P; ++r)
    if (group_of_rank_[r] == group_of_rank_[rank()]) members.push_back(r);
  group_comm_ = comm_->split(group_of_rank_[rank()], rank());
  group_placement_ = std::make_unique<Placement>(placement_.restricted(members));
}

void Engine::build_target_table() {
  const uint64_t N = cfg_.neuron_count();
  const int P = comm_->size();
  // Synapses on this rank per global source.
  std::vector<uint64_t> local_count(N, 0);
  for (const auto& ts : threads_) {
    const auto& st = ts.store;
    for (uint64_t s = 0; s < N; ++s) local_count[s] += st.seg_first[st.row_head[s + 1]] - st.seg_first[st.row_head[s]];
  }
  has_targets_.assign(N, 0);
  for (uint64_t s = 0; s < N; ++s) has_targets_[s] = local_count[s] > 0;

  // Tell each owner rank how many synapses its neurons have here.
  std::vector<size_t> send_counts(P), send_displs(P), recv_counts(P), recv_displs(P);
  const uint64_t mine = placement_.rank_count(rank());
  std::vector<uint64_t> send(N), recv(size_t(P) * mine);
  size_t off = 0;
  for (int r = 0; r < P; ++r) {
    send_displs[r] = off;
    send_counts[r] = placement_.rank_count(r);
    for (uint64_t j = 0; j < send_counts[r]; ++j) send[off + j] = local_count[placement_.rank_gid(r, j)];
    off += send_counts[r];
    recv_counts[r] = mine;
    recv_displs[r] = size_t(r) * mine;
  }
  comm_->alltoallv(send.data(), send_counts, send_displs, recv.data(), recv_counts, recv_displs);

  // Two-tier: destinations in the area group go to the group's table (as group ranks), the
  // others to the global table.
  std::vector<int> group_rank(P, -1);
  if (two_tier())
    for (int r = 0, i = 0; r < P; ++r)
      if (group_of_rank_[r] == group_of_rank_[rank()]) group_rank[r] = i++;
  out_degree_.assign(mine, 0);
  for (TargetTable* t : {&targets_, &global_targets_}) {
    t->dest_begin.assign(mine + 1, 0);
    t->dest_ranks.clear();
  }
  for (uint64_t j = 0; j < mine; ++j) {
    for (int r = 0; r < P; ++r) {
      const uint64_t k = recv[size_t(r) * mine + j];
      out_degree_[j] += k;
      if (!k) continue;
      if (!two_tier()) targets_.dest_ranks.push_back(uint32_t(r));
      else if (group_rank[r] >= 0) targets_.dest_ranks.push_back(uint32_t(group_rank[r]));
      else global_targets_.dest_ranks.push_back(uint32_t(r));
    }
    targets_.dest_begin[j + 1] = targets_.dest_ranks.size();
    global_targets_.dest_begin[j + 1] = global_targets_.dest_ranks.size();
  }
}

// Deliver: add every synapse segment that arrives in this cycle to the input buffer (zeroed by
// the update that consumed it), one step offset at a time so the writes stay in one row of the
// buffer (measured at 20480 neurons: 5.5 -> 4.6 ns per event; huge pages for the synapses then
// 3.4 ns). Segments are known in advance, so their synapses are prefetched a few entries ahead.
namespace {
// The delivery loop for one layout: Decode gives (target, weight) of a stored synapse.
template <class Syn, class RowOf, class Decode>
void deliver_rows(std::vector<std::vector<DeliveryEntry>>& queue, size_t first_queue, int64_t L, const Syn* syn,
                  RowOf row_of, Decode decode, uint64_t& events, uint64_t& segments) {
  // Entries ahead to prefetch, all lines of the segment: measured best here (4..32 tried).
  constexpr size_t kAhead = 8;
  for (int64_t o = 0; o < L; ++o) {
    auto& due = queue[first_queue + o];
    int32_t* row = row_of(o);
    const size_t entries = due.size();
    for (size_t e = 0; e < entries; ++e) {
      if (e + kAhead < entries) {
        const DeliveryEntry& next = due[e + kAhead];
        // From the start of the first cache line: stepping 64 bytes from an unaligned start
        // would skip the segment's last line whenever the segment ends early in it.
        const uintptr_t first = reinterpret_cast<uintptr_t>(syn + next.first) & ~uintptr_t(63);
        const uintptr_t end = reinterpret_cast<uintptr_t>(syn + next.first + next.count);
        for (uintptr_t p = first; p < end; p += 64) __builtin_prefetch(reinterpret_cast<const void*>(p));
      }
      const DeliveryEntry entry = due[e];
      const Syn* s = syn + entry.first;
      for (uint32_t i = 0; i < entry.count; ++i) {
        const auto [target, weight] = decode(s[i]);
        row[target] += weight;
      }
      events += entry.count;
    }
    segments += entries;
    due.clear();
  }
}
}  // namespace

RANVIER_PHASE void Engine::deliver(ThreadState& ts, int64_t cycle) {
  const int64_t L = cfg_.steps_per_cycle;
  auto rows = [&](int64_t o) { return ts.input.data() + input_row(cycle, o) * ts.input_stride; };
  const size_t first_queue = size_t((cycle % queue_cycles_) * L);
  uint64_t events = 0, segments = 0;
  const SynapseStore& st = ts.store;
  if (st.is_packed()) {
    const int bits = st.target_bits;
    const uint32_t mask = (uint32_t(1) << bits) - 1;
    deliver_rows(ts.queue, first_queue, L, st.packed.data(), rows,
                 [=](uint32_t w) { return std::pair<uint32_t, int32_t>(w & mask, int32_t(w) >> bits); }, events, segments);
  } else {
    deliver_rows(ts.queue, first_queue, L, st.synapses.data(), rows,
                 [](const Synapse& s) { return std::pair<uint32_t, int32_t>(s.target, s.weight); }, events, segments);
  }
  ts.counters.synaptic_events_recurrent += events;
  ts.counters.delivery_segments += segments;
}

// External Poisson drive, drawn on the fly per window of drive_steps steps (the minimum delay:
// a cycle, or two with overlap) and keyed by (neuron, window): block 0 of a neuron's window
// gives its event count (word 0) and its first three events (words 1-3);
// event j >= 3 uses word (j-3) % 4 of block 1 + (j-3) / 4. One 32-bit word w makes one event:
// w * L splits into the step (high 32 bits, uniform over the window) and a uniform for the
// efficacy (low 32 bits). Counts vary at random, so the work is laid out in passes without
// per-neuron branches: block 0 for all neurons (AVX2), counts and first events (vectorised, rare
// cases fixed after), then the further events from a flat list.
RANVIER_PHASE void Engine::drive(ThreadState& ts, int64_t cycle) {
  // Drawn at the window's first cycle for all its steps, into the rows of those steps.
  if ((cycle * cfg_.steps_per_cycle) % cfg_.drive_steps) return;
  const uint64_t L = uint64_t(cfg_.drive_steps);
  const uint32_t window = uint32_t(cycle * cfg_.steps_per_cycle / cfg_.drive_steps);
  const uint64_t stride = ts.input_stride;
  const double scale = std::ldexp(1.0, cfg_.fraction_bits);
  const Key key = key_from_seed(cfg_.seed);
  int32_t* input = ts.input.data();
  uint64_t events = 0;
  for (uint32_t di = 0; di < cfg_.drives.size(); ++di) {
    const auto& d = cfg_.drives[di];
    if (d.n_synapses == 0 || d.rate_hz <= 0) continue;
    const PoissonTable& table = poisson_[d.target];
    const double mean = d.weight_mean, sd = d.weight_sd;
    for (const auto& range : ts.neurons.ranges) {
      if (range.population != d.target) continue;
      if (L == 1 && sd == 0) {
        events += fixed_weight_drive(ts, range, di, table, int32_t(std::rint(mean * scale)), window);
        continue;
      }
      // In chunks, so the scratch arrays below stay in L1 next to the input buffer.
      constexpr uint64_t kChunk = 512;
      for (uint64_t begin = range.begin; begin < range.end; begin += kChunk) {
        const uint64_t m = std::min(kChunk, range.end - begin);
        const uint64_t* gid = ts.neurons.gid.data() + begin;
        int32_t* in = input + begin;
        auto& words = ts.drive_words;
        auto& count = ts.drive_count;
        if (words.size() < 4 * m) { words.resize(4 * m); count.resize(m); }
        philox4x32_10_lanes(ts.neurons.gid_lo.data() + begin, ts.neurons.gid_hi.data() + begin, m,
                            Purpose::external, di, window, 0, key, words.data(), m);
        const bool saturated = poisson_counts(words.data(), m, table.thresholds(), count.data());
        // Every event as (neuron, word) in one flat list: words 1-3 of block 0 are written for
        // every neuron and kept as far as its count needs them (no branch per neuron); counts of
        // kCounts and more are drawn exactly, and events past the third use further blocks.
        auto& ev_neuron = ts.extra_neuron;
        auto& ev_word = ts.extra_word;
        if (ev_neuron.size() < 3 * m + 3) { ev_neuron.resize(3 * m + 3); ev_word.resize(3 * m + 3); }
        size_t n_events = 0;
#if defined(RANVIER_HAVE_AVX512_KERNELS)
        if (avx512_kernels()) {
          // The same events in another order (slot by slot; sums do not depend on it):
          // compress-stores list a slot's events for 16 neurons at once.
          if (saturated)
            for (uint64_t i = 0; i < m; ++i)
              if (count[i] == kCounts) count[i] = table.sample(to_uniform(words[i]));
          uint64_t further = 0;
          for (uint64_t i = 0; i < m; ++i) further += count[i] > 3 ? count[i] - 3 : 0;
          if (ev_neuron.size() < 3 * m + further + 32) { ev_neuron.resize(3 * m + further + 32); ev_word.resize(ev_neuron.size()); }
          n_events = list_events_avx512(count.data(), words.data(), m, ev_neuron.data(), ev_word.data());
          if (further)
            for (uint64_t i = 0; i < m; ++i)
              for (uint32_t j = 3; j < count[i]; ++j) {  // rare: further blocks
                const Counter b = philox4x32_10(make_counter(gid[i], Purpose::external, di, window, 1 + (j - 3) / 4), key);
                ev_neuron[n_events] = uint32_t(i);
                ev_word[n_events] = b[(j - 3) % 4];
                ++n_events;
              }
        } else
#endif
        for (uint64_t i = 0; i < m; ++i) {
          uint32_t c = count[i];
          if (saturated && c == kCounts) c = table.sample(to_uniform(words[i]));
          if (c > 3 && ev_neuron.size() < n_events + c + 3 * (m - i)) {
            ev_neuron.resize(2 * (n_events + c + 3 * m)); ev_word.resize(ev_neuron.size());
          }
          for (int j = 0; j < 3; ++j) {
            ev_neuron[n_events + j] = uint32_t(i);
            ev_word[n_events + j] = words[(j + 1) * m + i];
          }
          n_events += std::min<uint32_t>(c, 3);
          for (uint32_t j = 3; j < c; ++j) {  // rare: further blocks
            const Counter b = philox4x32_10(make_counter(gid[i], Purpose::external, di, window, 1 + (j - 3) / 4), key);
            ev_neuron[n_events] = uint32_t(i);
            ev_word[n_events] = b[(j - 3) % 4];
            ++n_events;
          }
        }
        events += n_events;
        // Efficacies and places vectorised, the few normal tails fixed, then added.
        auto& ev_weight = ts.extra_weight;
        auto& ev_at = ts.extra_at;
        auto& ev_tail = ts.extra_tail;
        auto& tails = ts.extra_tails;
        if (ev_weight.size() < n_events + 1) {
          ev_weight.resize(ev_neuron.size() + 1); ev_at.resize(ev_weight.size());
          ev_tail.resize(ev_weight.size()); tails.resize(ev_weight.size());
        }
        const size_t n_tails = event_terms(ev_word.data(), ev_neuron.data(), n_events, L, stride, mean, sd, scale,
                                           ev_weight.data(), ev_at.data(), ev_tail.data(), tails.data());
        for (size_t t = 0; t < n_tails; ++t) {
          const uint32_t e = tails[t];
          ev_weight[e] = tail_efficacy(ev_word[e], L, mean, sd, scale);
        }
        for (size_t e = 0; e < n_events; ++e) in[ev_at[e]] += ev_weight[e];
      }
    }
  }
  ts.counters.synaptic_events_external += events;
}

// The drive of one-step windows with a fixed efficacy (the microcircuit's): only a count per
// neuron and step, k events adding k * weight. One Philox block per neuron serves four steps
// (word window % 4 of the block keyed by window / 4), drawn for all neurons at once (AVX2).
uint64_t Engine::fixed_weight_drive(ThreadState& ts, const PopulationRange& range, uint32_t di,
                                    const PoissonTable& table, int32_t weight, uint32_t window) {
  const uint64_t m = range.end - range.begin;
  auto& words = ts.fixed_drive_words[di];
  if (words.size() != 4 * m || (window & 3) == 0 || ts.fixed_drive_group[di] != (window >> 2)) {
    words.resize(4 * m);
    philox4x32_10_lanes(ts.neurons.gid_lo.data() + range.begin, ts.neurons.gid_hi.data() + range.begin, m,
                        Purpose::external, di, window >> 2, 0x80000000u, key_from_seed(cfg_.seed), words.data(), m);
    ts.fixed_drive_group[di] = window >> 2;
  }
  const uint32_t* w = words.data() + (window & 3) * m;
  int32_t* in = ts.input.data() + range.begin;  // the single row of a one-step window
  constexpr uint64_t kChunk = 512;
  if (ts.drive_count.size() < kChunk) ts.drive_count.resize(kChunk);
  uint32_t* count = ts.drive_count.data();
  uint64_t events = 0;
  for (uint64_t begin = 0; begin < m; begin += kChunk) {
    const uint64_t n = std::min(kChunk, m - begin);
    if (poisson_counts(w + begin, n, table.thresholds(), count))
      for (uint64_t i = 0; i < n; ++i)
        if (count[i] == kCounts) count[i] = table.sample(to_uniform(w[begin + i]));
    uint32_t sum = 0;
#pragma omp simd reduction(+ : sum)
    for (uint64_t i = 0; i < n; ++i) {
      in[begin + i] += int32_t(count[i]) * weight;
      sum += count[i];
    }
    events += sum;
  }
  return events;
}

// Update: exact integration of every neuron over the cycle's steps, step by step; the loop over
// a population's neurons is vectorised (measured faster here than keeping a block of neurons in
// registers across the steps). Spikes are collected from a byte mask after each step.
RANVIER_PHASE void Engine::update(ThreadState& ts, int64_t cycle) {
  const uint64_t n = ts.neurons.size(), stride = ts.input_stride;
  const int64_t L = cfg_.steps_per_cycle;
  const double scale = std::ldexp(1.0, -cfg_.fraction_bits);
  const double* V = ts.neurons.V.data();
  const double* C = ts.neurons.c.data();
  uint8_t* fired = ts.fired.data();
  ts.spikes_out.clear();
  const size_t traced = traced_ids_.size();
  for (int64_t o = 0; o < L; ++o) {
    int32_t* in = ts.input.data() + input_row(cycle, o) * stride;
    // Each population range advances by its model's kernel, chosen at build: one call per range.
    for (size_t ri = 0; ri < ts.neurons.ranges.size(); ++ri) {
      const PopulationRange& range = ts.neurons.ranges[ri];
      ts.updates[ri]->step({in + range.begin, scale, cycle * L + o}, columns_of(ts.neurons, range),
                           fired + range.begin);
    }
    std::fill(in, in + n, 0);  // consumed: ready for the next cycle while the row is in cache
    const int64_t step = cycle * L + o + 1;
    for (uint64_t k = 0; k < n; k += 8) {
      uint64_t word;
      std::memcpy(&word, fired + k, 8);
      if (!word) continue;
      for (uint64_t i = k; i < std::min(k + 8, n); ++i) {
        if (!fired[i]) continue;
        ts.spikes_out.push_back(make_record(ts.neurons.gid[i], uint32_t(o)));
        if (cfg_.record_spikes) { ts.rec_gid.push_back(ts.neurons.gid[i]); ts.rec_step.push_back(step); }
      }
    }
    for (const auto& [k, row] : ts.traced) {
      const size_t at = size_t((cycle - run_first_cycle_) * L + o) * traced + trace_base_ + row;
      trace_V_[at] = V[k];
      trace_c_[at] = C[k];
    }
  }
}

// Schedule: every received spike's synapse segments go into the queue of the cycle in which
// they arrive, with the step offset of arrival.
RANVIER_PHASE void Engine::schedule(ThreadState& ts, const std::vector<SpikeRecord>& records, int64_t cycle) {
  const auto& st = ts.store;
  const int64_t L = cfg_.steps_per_cycle;
  const Arrival* arrival = arrival_.data();
  uint64_t scheduled = 0;
  for (SpikeRecord rec : records) {
    const uint64_t g = record_gid(rec);
    const uint32_t o = record_offset(rec);
    for (uint32_t h = st.row_head[g]; h < st.row_head[g + 1]; ++h) {
      const Arrival at = arrival[o + st.seg_delay[h]];
      const uint32_t first = st.seg_first[h], count = st.seg_first[h + 1] - first;
      ts.queue[((cycle + at.cycles) % queue_cycles_) * L + at.offset].push_back({first, count});
      scheduled += count;
    }
  }
  ts.counters.events_scheduled += scheduled;
}

void Engine::run_cycles(int64_t cycles) {
  if (threads_.empty()) throw std::logic_error("build() must be called before run_cycles()");
  if (cycle_ + cycles >= (int64_t(1) << 32)) throw std::invalid_argument("runs are limited to 2^32 cycles");
  const int T = cfg_.threads;
  const int64_t L = cfg_.steps_per_cycle;
  trace_base_ = trace_V_.size();
  trace_V_.resize(trace_base_ + size_t(cycles * L) * traced_ids_.size());
  trace_c_.resize(trace_V_.size());
  // Room for this call's timers, grown geometrically: no allocation inside a cycle, and never an
  // exact reserve per call (that copied the whole history every chunk: quadratic in run length).
  // The caller takes the timers after each chunk (take_cycle_timers), so this stays one chunk.
  if (timers_.capacity() < timers_.size() + size_t(cycles))
    timers_.reserve(std::max(2 * timers_.capacity(), timers_.size() + size_t(cycles)));
  const int64_t first = cycle_;
  run_first_cycle_ = first;
  // One cycle: deliver (segments due now) -> drive and update (each thread its own neurons) ->
  // collocate and exchange (the master thread alone talks to the communicator) -> schedule (each
  // thread files the received spikes' segments under their arrival cycle and step). Barriers
  // make every phase time the slowest thread's, and make `received_` complete before any thread
  // schedules from it; it is not written again until the next cycle's exchange.
  //
  // Overlapped schedule (cfg_.overlap): the exchange of cycle c starts after its collocate and
  // finishes after the update of cycle c + 1, so it moves while c + 1 is computed. Correct
  // because (1) a cycle is at most half the minimum delay, so a spike of cycle c arrives in
  // cycle c + 2 or later, and its segments are queued at the end of c + 1, before c + 2
  // delivers; (2) two send buffers alternate, so collocating c + 1 never touches the records of
  // c still in flight; (3) at most one exchange is in flight: c finishes before c + 1 starts.
  // The exchange still in flight at the end of a call is finished there, so every call leaves
  // all spikes queued and the counters whole.
#pragma omp parallel num_threads(T)
  {
    ThreadState& ts = threads_[omp_get_thread_num()];
    double t0 = 0, t1 = 0, t2 = 0, t3 = 0, t4 = 0, t5 = 0, communicate = 0, synchronize = 0;
    for (int64_t cycle = first; cycle < first + cycles; ++cycle) {
#pragma omp master
      t0 = omp_get_wtime();
      deliver(ts, cycle);
#pragma omp master
      if (in_flight_cycle_ >= 0) exchange_->progress();
#pragma omp barrier
#pragma omp master
      t1 = omp_get_wtime();
      drive(ts, cycle);
      update(ts, cycle);
#pragma omp barrier
#pragma omp master
      {
        t2 = omp_get_wtime();
        collocate(cycle);
        t3 = omp_get_wtime();
        if (two_tier()) {
          exchange_two_tier(cycle, cycle + 1 == first + cycles, communicate, synchronize);
        } else {
          if (cfg_.barrier) comm_->barrier();
          t4 = omp_get_wtime();
          if (in_flight_cycle_ >= 0) finish_exchange();
          exchange_->start(send_[cycle & 1], exchange_counters_);
          in_flight_cycle_ = cycle;
          if (!cfg_.overlap) finish_exchange();
          synchronize = t4 - t3;
          communicate = omp_get_wtime() - t4;
        }
        t5 = omp_get_wtime();
      }
#pragma omp barrier
      if (received_cycle_ >= 0) schedule(ts, received_, received_cycle_);
      if (global_received_base_ >= 0) schedule(ts, global_received_, global_received_base_);
#pragma omp barrier
#pragma omp master
      {
        const double t6 = omp_get_wtime();
        timers_.push_back({(t1 - t0) + (t6 - t5), t2 - t1, t3 - t2, communicate, synchronize});
        cycle_ = cycle + 1;
        received_cycle_ = -1;
        global_received_base_ = -1;
      }
    }
    if (in_flight_cycle_ >= 0) {  // only with overlap; every thread sees it after the barrier above
#pragma omp barrier
#pragma omp master
      {
        const double t7 = omp_get_wtime();
        finish_exchange();
        timers_.back()[kCommunicate] += omp_get_wtime() - t7;
      }
#pragma omp barrier
      schedule(ts, received_, received_cycle_);
#pragma omp barrier
#pragma omp master
      received_cycle_ = -1;
    }
  }
}

// Completes the exchange in flight: `received_` holds the spikes of cycle received_cycle_.
void Engine::finish_exchange() {
  exchange_->finish(received_, exchange_counters_);
  received_cycle_ = in_flight_cycle_;
  in_flight_cycle_ = -1;
  ++(two_tier() ? rank_counters_.exchanges_local : rank_counters_.exchanges_global);
  for (SpikeRecord rec : received_) rank_counters_.spikes_delivered += has_targets_[record_gid(rec)];
}

// Two-tier exchange of one cycle: inside the area group now; among all ranks at the end of each
// window of D cycles (and at the end of a run, so every call leaves all spikes queued). A barrier
// before each, on the same communicator, is timed as 'synchronize'.
void Engine::exchange_two_tier(int64_t cycle, bool last, double& communicate, double& synchronize) {
  const int64_t D = cfg_.global_interval;
  double t = omp_get_wtime();
  if (cfg_.barrier) group_comm_->barrier();
  double u = omp_get_wtime();
  synchronize = u - t;
  exchange_->start(send_[cycle & 1], exchange_counters_);
  in_flight_cycle_ = cycle;
  finish_exchange();
  t = omp_get_wtime();
  communicate = t - u;
  if ((cycle + 1) % D != 0 && !last) return;
  if (cfg_.barrier) comm_->barrier();
  u = omp_get_wtime();
  synchronize += u - t;
  global_exchange_->start(global_send_, global_counters_);
  global_exchange_->finish(global_received_, global_counters_);
  global_send_.clear();
  global_received_base_ = cycle - cycle % D;
  ++rank_counters_.exchanges_global;
  // Strategies that send every record everywhere (all-gathers) also bring this group's own
  // spikes, which the group exchange has delivered already.
  const int group = group_of_rank_[rank()];
  size_t kept = 0;
  for (SpikeRecord rec : global_received_) {
    const uint64_t g = record_gid(rec);
    if (group_of_rank_[placement_.rank_of(g)] == group) continue;
    global_received_[kept++] = rec;
    rank_counters_.spikes_delivered += has_targets_[g];
  }
  global_received_.resize(kept);
  communicate += omp_get_wtime() - u;
}

// Collocate: gather the threads' spikes into this cycle's send buffer. Two-tier: a spike goes
// to the group's buffer if it has targets in the group, and to the global buffer, with its
// offset counted from the start of the D-cycle window, if it has targets elsewhere.
RANVIER_PHASE void Engine::collocate(int64_t cycle) {
  auto& send = send_[cycle & 1];
  send.clear();
  if (!two_tier()) {
    for (auto& ts : threads_) {
      for (SpikeRecord rec : ts.spikes_out) rank_counters_.events_expected += out_degree_[placement_.rank_index(record_gid(rec))];
      rank_counters_.spikes_emitted += ts.spikes_out.size();
      send.insert(send.end(), ts.spikes_out.begin(), ts.spikes_out.end());
    }
    return;
  }
  const uint32_t shift = uint32_t((cycle % cfg_.global_interval) * cfg_.steps_per_cycle);
  const auto& local = targets_.dest_begin;
  const auto& global = global_targets_.dest_begin;
  for (auto& ts : threads_) {
    rank_counters_.spikes_emitted += ts.spikes_out.size();
    for (SpikeRecord rec : ts.spikes_out) {
      const uint64_t j = placement_.rank_index(record_gid(rec));
      rank_counters_.events_expected += out_degree_[j];
      if (local[j + 1] > local[j]) send.push_back(rec);
      if (global[j + 1] > global[j]) global_send_.push_back(make_record(record_gid(rec), record_offset(rec) + shift));
    }
  }
}

uint64_t Engine::synapse_count() const {
  uint64_t n = 0;
  for (const auto& ts : threads_) n += ts.store.size();
  return n;
}

std::vector<int> Engine::synapse_entry_bytes() const {
  std::vector<int> out;
  for (const auto& ts : threads_) out.push_back(ts.store.is_packed() ? 4 : 8);
  return out;
}

uint64_t Engine::synapse_bytes() const {
  uint64_t n = 0;
  for (const auto& ts : threads_) n += ts.store.bytes();
  return n;
}

Counters Engine::counters() const {
  Counters c = rank_counters_;
  const ExchangeCounters& a = exchange_counters_;
  const ExchangeCounters& b = global_counters_;
  c.exchange = {a.spikes_sent + b.spikes_sent, a.spikes_received + b.spikes_received, a.bytes_sent + b.bytes_sent,
                a.messages_sent + b.messages_sent, a.overflow_rounds + b.overflow_rounds,
                a.exchange_resizes + b.exchange_resizes};
  c.exchange_global = two_tier() ? b : a;
  for (const auto& ts : threads_) {
    c.synaptic_events_recurrent += ts.counters.synaptic_events_recurrent;
    c.delivery_segments += ts.counters.delivery_segments;
    c.synaptic_events_external += ts.counters.synaptic_events_external;
    c.events_scheduled += ts.counters.events_scheduled;
  }
  return c;
}

uint64_t Engine::events_pending() const {
  uint64_t n = 0;
  for (const auto& ts : threads_)
    for (const auto& q : ts.queue)
      for (const auto& e : q) n += e.count;
  return n;
}

void Engine::take_spikes(std::vector<uint64_t>& gid, std::vector<int64_t>& step) {
  gid.clear();
  step.clear();
  for (auto& ts : threads_) {
    gid.insert(gid.end(), ts.rec_gid.begin(), ts.rec_gid.end());
    step.insert(step.end(), ts.rec_step.begin(), ts.rec_step.end());
    ts.rec_gid.clear();      // capacity kept: the next chunk records into the same memory
    ts.rec_step.clear();
  }
}

std::vector<std::array<double, kPhases>> Engine::take_cycle_timers() {
  std::vector<std::array<double, kPhases>> taken;
  taken.reserve(timers_.capacity());
  taken.swap(timers_);
  return taken;
}

void Engine::connections(std::vector<uint64_t>& src, std::vector<uint64_t>& tgt, std::vector<double>& w,
                         std::vector<int64_t>& d) const {
  const double scale = std::ldexp(1.0, -cfg_.fraction_bits);
  const uint64_t N = cfg_.neuron_count();
  for (const auto& ts : threads_) {
    const auto& st = ts.store;
    for (uint64_t s = 0; s < N; ++s)
      for (uint32_t h = st.row_head[s]; h < st.row_head[s + 1]; ++h)
        for (uint32_t i = st.seg_first[h]; i < st.seg_first[h + 1]; ++i) {
          src.push_back(s);
          tgt.push_back(ts.neurons.gid[st.target(i)]);
          w.push_back(st.weight(i) * scale);
          d.push_back(st.seg_delay[h]);
        }
  }
}

void Engine::state_trace(std::vector<uint64_t>& ids, std::vector<double>& V, std::vector<double>& c) const {
  const size_t n = traced_ids_.size();
  const size_t steps = n ? trace_V_.size() / n : 0;
  ids = traced_ids_;
  V.assign(n * steps, 0.0);
  c.assign(n * steps, 0.0);
  for (size_t s = 0; s < steps; ++s)
    for (size_t r = 0; r < n; ++r) {
      V[r * steps + s] = trace_V_[s * n + r];
      c[r * steps + s] = trace_c_[s * n + r];
    }
}

}  // namespace ranvier
