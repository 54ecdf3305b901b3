// One interface for every spike-exchange strategy: configure once, then per interval start the
// exchange of this rank's spikes and finish it. The engine calls finish right after start, or,
// with the overlapped schedule, one interval later (the next interval is computed meanwhile).
// A strategy is one .cpp file registered in registry.cpp; adding one touches no other.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "base/placement.hpp"

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

// Data traffic to other ranks: spike records and the counts that announce them, as the
// point-to-point transfers they amount to (a collective over P ranks counts P - 1 transfers per
// rank). Synchronisation without data (barriers, fences, conservation sums) is not counted here;
// its cost shows in the 'communicate' timer.
struct ExchangeCounters {
  uint64_t spikes_sent = 0;      // records addressed to ranks, one per destination (self included)
  uint64_t spikes_received = 0;  // records received (self included)
  uint64_t bytes_sent = 0;       // payload and counts sent to other ranks
  uint64_t messages_sent = 0;    // non-empty transfers to other ranks
  uint64_t overflow_rounds = 0;  // second rounds for records that did not fit a fixed buffer
  uint64_t exchange_resizes = 0; // fixed buffers grown or shrunk
  uint64_t persistent_reinits = 0;  // persistent operations freed and initialised again (other slot sizes)
};

class Exchange {
 public:
  virtual ~Exchange() = default;
  // steps: the interval's length in steps (every record's offset is below it).
  virtual void configure(Communicator& comm, const Placement& placement, const TargetTable& targets,
                         uint32_t steps) = 0;
  // Begins sending this rank's spikes of one interval. `local` stays valid until finish().
  virtual void start(std::span<const SpikeRecord> local, ExchangeCounters& counters) = 0;
  // Completes it: `received` gets every record this rank must deliver (its own included).
  // Grows buffers as needed: nothing is ever dropped.
  virtual void finish(std::vector<SpikeRecord>& received, ExchangeCounters& counters) = 0;
  // Called while the next interval is computed, so a library without a progress thread moves data.
  virtual void progress() {}
};

std::unique_ptr<Exchange> make_exchange(const std::string& name);
std::vector<std::string> exchange_names();

// The one non-blocking operation a strategy has in flight between start() and finish().
class InFlight {
 public:
  void begin(Communicator& comm, Request r) { comm_ = &comm; request_ = r; }
  void progress() {
    if (request_ >= 0 && comm_->test(request_)) request_ = -1;
  }
  void complete() {
    if (request_ >= 0) comm_->wait(request_);
    request_ = -1;
  }

 private:
  Communicator* comm_ = nullptr;
  Request request_ = -1;
};

// The persistent operations of a strategy (MPI-4 persistent collectives or point-to-point),
// initialised in configure() and kept: started together, completed together, freed when
// replaced or when the strategy is destroyed. The engine destroys its pathway, and so its
// strategies, before its communicator; mpi4py finalises MPI at the very end of the interpreter's
// exit (Py_AtExit), after Python has dropped the engine (should one outlive it, the MPI
// communicator frees nothing after MPI_Finalize).
class PersistentOps {
 public:
  PersistentOps() = default;
  PersistentOps(const PersistentOps&) = delete;
  PersistentOps& operator=(const PersistentOps&) = delete;
  ~PersistentOps() { release(); }

  void bind(Communicator& comm) { comm_ = &comm; }
  void add(Persistent p) { ops_.push_back(p); }
  size_t size() const { return ops_.size(); }
  Persistent operator[](size_t i) const { return ops_[i]; }
  // Frees operation i (inactive) and puts p in its place.
  void replace(size_t i, Persistent p) {
    comm_->free_persistent(ops_[i]);
    ops_[i] = p;
  }
  void start() {
    comm_->start_persistent(ops_);
    active_ = true;
  }
  void progress() {
    if (active_ && comm_->test_persistent(ops_)) active_ = false;
  }
  void complete() {
    if (active_) comm_->wait_persistent(ops_);
    active_ = false;
  }
  // Frees every operation. One still active (an exception between start and complete) is left
  // to MPI: freeing an active persistent collective is erroneous, and waiting for it here could
  // wait forever for ranks that have given up.
  void release() {
    if (!active_)
      for (Persistent p : ops_) comm_->free_persistent(p);
    ops_.clear();
    active_ = false;
  }

 private:
  Communicator* comm_ = nullptr;
  std::vector<Persistent> ops_;
  bool active_ = false;
};

// Shared by the strategies that send each spike only where it has targets: bound once to the
// placement and target table (configure), then per interval the records of `local` grouped by
// destination rank: records[displs[r] .. displs[r] + counts[r]).
struct Buckets {
  std::vector<size_t> counts, displs;
  std::vector<SpikeRecord> records;
  void bind(const Placement& placement, const TargetTable& targets, int ranks) {
    placement_ = &placement;
    targets_ = &targets;
    ranks_ = ranks;
  }
  void fill(std::span<const SpikeRecord> local);

 private:
  const Placement* placement_ = nullptr;
  const TargetTable* targets_ = nullptr;
  int ranks_ = 0;
};

// The ranks this rank sends to (some neuron has a target there) and receives from, self excluded.
// Collective: one all-to-all of flags.
void neighbour_ranks(Communicator& comm, const TargetTable& targets, std::vector<int>& destinations,
                     std::vector<int>& sources);

}  // namespace ranvier
