// The capacity policy of the fixed-size strategies (allgather-compressed, alltoall-fixed, rma and
// the persistent ones): grow at once past the largest count seen, shrink when traffic has stayed
// low for a while. Every rank feeds it the same global maximum (persistent-p2p: both ranks of a
// pair feed theirs the same count), so every rank takes the same decision.
#pragma once
#include <algorithm>
#include <cstdint>

namespace ranvier {

class FixedCapacity {
 public:
  // shrink_after: updates of low traffic before the capacity shrinks. growth: a capacity that grows
  // becomes at least growth times what it was (the persistent strategies double: each growth
  // re-initialises their operations, so they take fewer, larger steps).
  explicit FixedCapacity(uint64_t initial, uint64_t shrink_after = 256, uint64_t growth = 1)
      : capacity_(initial), shrink_after_(shrink_after), growth_(growth) {}
  uint64_t capacity() const { return capacity_; }
  // The largest count since the last update, over all ranks. True when the capacity changed.
  bool update(uint64_t global_max) {
    window_max_ = std::max(window_max_, global_max);
    if (global_max > capacity_) {
      capacity_ = std::max(global_max + global_max / 4 + 1, growth_ * capacity_);
      restart();
      return true;
    }
    if (++updates_ < shrink_after_) return false;
    const bool shrink = window_max_ * 4 < capacity_ && capacity_ > kMinimum;
    if (shrink) capacity_ = std::max<uint64_t>(kMinimum, 2 * window_max_);
    restart();
    return shrink;
  }
  static constexpr uint64_t kMinimum = 16;

 private:
  void restart() { updates_ = 0; window_max_ = 0; }
  uint64_t capacity_, shrink_after_, growth_;
  uint64_t updates_ = 0, window_max_ = 0;
};

}  // namespace ranvier
