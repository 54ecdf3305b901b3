// How this rank's spikes of a cycle reach the ranks that hold their targets: a pathway owns the
// exchange strategies, their target tables and buffers, and the schedule (when to start and
// finish an exchange). The engine's cycle talks only to this interface, so it has one path:
//   DirectPathway   one exchange among all ranks every cycle, optionally overlapped with the
//                   next cycle's computation (pathway.cpp);
//   TwoTierPathway  an exchange inside the area group every cycle and among all ranks every D
//                   cycles (two_tier.cpp).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.hpp"
#include "base/placement.hpp"
#include "base/spec.hpp"
#include "exchange/exchange.hpp"

namespace ranvier {

// Received records whose step offsets count from the start of `cycle`.
struct SpikeBatch {
  const std::vector<SpikeRecord>* records;
  int64_t cycle;
};

struct PathwayCounters {
  uint64_t spikes_delivered = 0;   // received spikes with at least one synapse on this rank
  uint64_t exchanges_local = 0;    // two-tier: exchanges inside the area group
  uint64_t exchanges_global = 0;   // exchanges among all ranks
  ExchangeCounters exchange;       // every exchange
  ExchangeCounters exchange_global;  // the part of `exchange` among all ranks
};

class SpikePathway {
 public:
  virtual ~SpikePathway() = default;
  // Once, after the synapses are built. `targets`: per neuron of this rank, the world ranks that
  // hold synapses of it; `has_targets`: per global id, whether this rank holds a synapse of it
  // (both outlive the pathway).
  virtual void configure(Communicator& world, const Placement& placement, const TargetTable& targets,
                         const std::vector<uint8_t>& has_targets, uint32_t steps_per_cycle) = 0;
  // How many cycles back a received record's offset may count from (sizes the delivery queues).
  virtual int64_t window_cycles() const = 0;
  // Gathers the threads' spikes of `cycle` (offsets within the cycle) for the exchange.
  virtual void collocate(int64_t cycle, std::span<const std::vector<SpikeRecord>* const> per_thread) = 0;
  // Exchanges them; `last`: the call's last cycle (every call leaves all spikes received or in
  // flight). Adds the seconds spent in barriers and in the exchange.
  virtual void exchange(int64_t cycle, bool last, double& synchronize, double& communicate) = 0;
  // While the next cycle is computed: moves an exchange in flight along.
  virtual void progress() = 0;
  // An exchange still in flight (overlap) is finished by finish_in_flight() at the end of a call.
  virtual bool in_flight() const = 0;
  virtual void finish_in_flight() = 0;
  // The spikes received and not yet scheduled; forget() once every thread has scheduled them.
  virtual std::span<const SpikeBatch> received() const = 0;
  virtual void forget_received() = 0;
  virtual PathwayCounters counters() const = 0;
};

// The pathway the configuration asks for (global_interval > 0: two-tier); checked already.
std::unique_ptr<SpikePathway> make_pathway(const EngineConfig& cfg);

}  // namespace ranvier
