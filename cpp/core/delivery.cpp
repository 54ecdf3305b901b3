// Delivery: the queues of synapse segments due per cycle and step offset, filled by schedule()
// from the received spikes and emptied by deliver() into the input buffer.
#include <algorithm>
#include <cmath>

#include "core/engine.hpp"

namespace ranvier {

void Engine::build_delivery_queues() {
  const int64_t L = cfg_.steps_per_cycle;
  // Delivery queues: a ring long enough for the longest delay on this rank, counted from the
  // start of the longest window a record's offset can refer to (D cycles with two-tier).
  const int64_t window = L * pathway_->window_cycles();
  uint64_t max_delay = uint64_t(L);
  for (const auto& ts : threads_) {
    for (uint16_t d : ts.store.seg_delay) max_delay = std::max<uint64_t>(max_delay, d);
    for (const auto& ps : ts.plastic)
      for (uint16_t d : ps.seg_delay) max_delay = std::max<uint64_t>(max_delay, d);
  }
  // offset + delay < window + max_delay <= queue_cycles_ * L: a segment's queue is less than one
  // turn of the ring ahead of its spike's cycle (schedule() wraps it with one subtraction).
  queue_cycles_ = int64_t((window - 1 + max_delay) / L + 1);
  for (auto& ts : threads_) {
    ts.queue.assign(queue_cycles_ * L, {});
    ts.plastic_pending = std::vector<PendingEfficacies>(ts.plastic.empty() ? 0 : size_t(queue_cycles_ * L));
    // A target's spike is forgotten once no delivery to come can ask for the trace before the
    // next one: a spike received now asks at t_pre - d, and t_pre is at most a window behind.
    build_post_history(cfg_, ts.neurons, ts.plastic, int64_t(2 * max_delay) + window + L, ts.history);
  }
}

// Deliver: add every synapse segment that arrives in this cycle to the input buffer (zeroed by
// the update that consumed it), one step offset at a time so the writes stay in one row of the
// buffer (measured at 20480 neurons: 5.5 -> 4.6 ns per event; huge pages for the synapses then
// 3.4 ns). Segments are known in advance, so their synapses are prefetched a few entries ahead.
namespace {
// Prefetches every cache line of [begin, end), from the start of the first line: stepping 64
// bytes from an unaligned start would skip the last line whenever the range ends early in it.
inline void prefetch_lines(const void* begin, const void* end) {
  const uintptr_t last = reinterpret_cast<uintptr_t>(end);
  for (uintptr_t p = reinterpret_cast<uintptr_t>(begin) & ~uintptr_t(63); p < last; p += 64)
    __builtin_prefetch(reinterpret_cast<const void*>(p));
}

// The delivery loop for one layout: Decode gives (target, weight) of a stored synapse.
template <class Syn, class RowOf, class Decode>
void deliver_rows(std::vector<std::vector<DeliveryEntry>>& queue, size_t first_queue, int64_t L, const Syn* syn,
                  RowOf row_of, Decode decode, uint64_t& events, uint64_t& segments) {
  // Entries ahead to prefetch, all lines of the segment: 8 measured best on an AVX-512 Xeon
  // (4..32 tried) and on an AVX2 EPYC (4, 12, 16 and first lines only tried, in paired chunks;
  // docs/performance.md). A build may set another to measure it (-DRANVIER_DELIVERY_PREFETCH_AHEAD=N).
#ifndef RANVIER_DELIVERY_PREFETCH_AHEAD
#define RANVIER_DELIVERY_PREFETCH_AHEAD 8
#endif
  constexpr size_t kAhead = RANVIER_DELIVERY_PREFETCH_AHEAD;
  for (int64_t o = 0; o < L; ++o) {
    auto& due = queue[first_queue + o];
    int32_t* row = row_of(o);
    // The row as an opaque pointer: gcc otherwise keeps the input's base and the row's offset
    // apart and adds them for every synapse (9 instructions a synapse instead of 8).
    asm("" : "+r"(row));
    const size_t entries = due.size();
    for (size_t e = 0; e < entries; ++e) {
      if (e + kAhead < entries) {
        const DeliveryEntry& next = due[e + kAhead];
        prefetch_lines(syn + next.first, syn + next.first + next.count);
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
  // Plastic efficacies, computed when their spikes were received (schedule), join the same
  // fixed-point rows; their events were counted then.
  for (int64_t o = 0; o < L && !ts.plastic_pending.empty(); ++o) {
    auto& due = ts.plastic_pending[first_queue + o];
    int32_t* row = rows(o);
    for (const PendingEfficacy& p : due) row[p.column] += p.efficacy;
    due.clear();
  }
  ts.counters.synaptic_events_recurrent += events;
  ts.counters.delivery_segments += segments;
}

// Schedule: every received spike's synapse segments go into the queue of the cycle in which
// they arrive, with the step offset of arrival; its plastic synapses are updated now, the way
// NEST's do (schedule_plastic), and their efficacies wait in the same ring. A spike's row is
// cold (its row head and its segments' headers missed every cache: two thirds of schedule's
// samples), and the spikes are known in advance: each spike's row head is fetched 8 spikes
// ahead and its headers 4 ahead (4/2 and 16/8 measured no better; docs/performance.md).
RANVIER_PHASE void Engine::schedule(ThreadState& ts, const std::vector<SpikeRecord>& records, int64_t cycle) {
  const auto& st = ts.store;
  const int64_t L = cfg_.steps_per_cycle;
  // The queues are a ring of queue_cycles_ x L; this cycle's first queue, and where it wraps
  // (no division per segment).
  const size_t ring = size_t(queue_cycles_ * L), base = size_t((cycle % queue_cycles_) * L);
  auto queue_of = [&](uint32_t offset_plus_delay) {
    const size_t q = base + offset_plus_delay;
    return q >= ring ? q - ring : q;
  };
  constexpr size_t kHeadAhead = 8, kHeadersAhead = 4;
  const size_t n_records = records.size();
  uint64_t scheduled = 0;
  for (size_t r = 0; r < n_records; ++r) {
    if (r + kHeadAhead < n_records) __builtin_prefetch(&st.row_head[record_gid(records[r + kHeadAhead])]);
    if (r + kHeadersAhead < n_records) {
      const uint64_t ahead = record_gid(records[r + kHeadersAhead]);
      const uint32_t h0 = st.row_head[ahead], h1 = st.row_head[ahead + 1];
      prefetch_lines(st.seg_first.data() + h0, st.seg_first.data() + h1);
      prefetch_lines(st.seg_delay.data() + h0, st.seg_delay.data() + h1);
    }
    const SpikeRecord rec = records[r];
    const uint64_t g = record_gid(rec);
    const uint32_t o = record_offset(rec);
    for (uint32_t h = st.row_head[g]; h < st.row_head[g + 1]; ++h) {
      const uint32_t first = st.seg_first[h], count = st.seg_first[h + 1] - first;
      ts.queue[queue_of(o + st.seg_delay[h])].push_back({first, count});
      scheduled += count;
    }
  }
  ts.counters.events_scheduled += scheduled;
  if (!ts.plastic.empty()) schedule_plastic(ts, records, cycle);
}

// The plastic synapses of the received spikes, in the records' order (a source's spikes in the
// order of their steps, so each synapse's updates are in the order of its spikes).
void Engine::schedule_plastic(ThreadState& ts, const std::vector<SpikeRecord>& records, int64_t cycle) {
  const int64_t L = cfg_.steps_per_cycle;
  const size_t ring = size_t(queue_cycles_ * L), base = size_t((cycle % queue_cycles_) * L);
  const double scale = std::ldexp(1.0, cfg_.fraction_bits);
  uint64_t events = 0, segments = 0;
  for (const SpikeRecord rec : records) {
    const uint64_t g = record_gid(rec);
    const uint32_t o = record_offset(rec);
    // The spike's time: the end of its step, as NEST stamps it (the step it is integrated in,
    // arrival, is t_pre + d - 1).
    const int64_t t_pre = cycle * L + o + 1;
    PendingRing pending{ts.plastic_pending.data(), ring, base + o};
    for (PlasticStore& ps : ts.plastic) {
      events += ps.rule->deliver(ps, g, t_pre, ts.history, pending, scale);
      segments += ps.row_head[g + 1] - ps.row_head[g];
    }
  }
  ts.counters.events_scheduled += events;
  ts.counters.synaptic_events_recurrent += events;
  ts.counters.delivery_segments += segments;
}

// Spikes whose synapses are still to be delivered (plastic ones are delivered when received:
// their pending efficacies are events already counted).
uint64_t Engine::events_pending() const {
  uint64_t n = 0;
  for (const auto& ts : threads_)
    for (const auto& q : ts.queue)
      for (const auto& e : q) n += e.count;
  return n;
}

}  // namespace ranvier
