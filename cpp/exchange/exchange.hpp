// One interface for every spike-exchange strategy: configure once, exchange once per cycle.
// A strategy is one .cpp file registered in registry.cpp; adding one touches no other.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/placement.hpp"

namespace ranvier {

// A spike on the wire: global id in the high 48 bits, step offset within the cycle below.
using SpikeRecord = uint64_t;
inline SpikeRecord make_record(uint64_t gid, uint32_t offset) { return (gid << 16) | offset; }
inline uint64_t record_gid(SpikeRecord r) { return r >> 16; }
inline uint32_t record_offset(SpikeRecord r) { return uint32_t(r & 0xFFFFu); }

// Which ranks hold at least one target of each of this rank's neurons (rank-local index j):
// ranks dest_ranks[dest_begin[j] .. dest_begin[j+1]).
struct TargetTable {
  std::vector<uint64_t> dest_begin;
  std::vector<uint32_t> dest_ranks;
};

struct ExchangeCounters {
  uint64_t spikes_sent = 0;      // records addressed to ranks, one per destination (self included)
  uint64_t spikes_received = 0;  // records received (self included)
  uint64_t bytes_sent = 0;       // payload and counts sent to other ranks
  uint64_t messages_sent = 0;    // non-empty transfers to other ranks
};

class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual void configure(Communicator& comm, const Placement& placement, const TargetTable& targets) = 0;
  // Sends this rank's spikes of the cycle; fills `received` with every record this rank must
  // deliver (its own included). Grows buffers as needed: nothing is ever dropped.
  virtual void exchange(std::span<const SpikeRecord> local, std::vector<SpikeRecord>& received,
                        ExchangeCounters& counters) = 0;
};

std::unique_ptr<Exchange> make_exchange(const std::string& name);
std::vector<std::string> exchange_names();

}  // namespace ranvier
