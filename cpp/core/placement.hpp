// Where each neuron lives: global id <-> (rank, thread, thread-local index), by arithmetic.
// Every scheme keeps gid order inside every rank and every thread, so each population is a
// contiguous range of a thread's neurons.
//   round-robin: gid g on rank g % P (the conventional scheme: every area on every rank);
//   block:       P balanced contiguous blocks;
//   segments:    contiguous gid ranges, each given a rank (areas on ranks, area groups, packings
//                computed from the model's areas); a rank may hold several ranges.
// Threads split a rank's neurons round-robin (round-robin) or in balanced blocks (the others).
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ranvier {

struct Location { int rank; int thread; uint64_t index; };

class Placement {
 public:
  enum class Kind { round_robin, block, segments };

  Placement(const std::string& name, uint64_t neurons, int ranks, int threads)
      : n_(neurons), P_(ranks), T_(threads) {
    if (name == "round-robin") kind_ = Kind::round_robin;
    else if (name == "block") kind_ = Kind::block;
    else throw std::invalid_argument("placement must be 'round-robin', 'block' or 'segments', got '" + name + "'");
  }

  // Segment s is gids [bounds[s], bounds[s + 1]) on rank ranks[s]; bounds start at 0, increase
  // strictly and end at the neuron count. Every rank must hold at least one neuron.
  Placement(const std::vector<uint64_t>& bounds, const std::vector<int32_t>& ranks, int P, int threads)
      : kind_(Kind::segments), P_(P), T_(threads), bounds_(bounds), seg_rank_(ranks) {
    if (bounds.size() != ranks.size() + 1 || ranks.empty() || bounds.front() != 0)
      throw std::invalid_argument("placement segments: need bounds = [0, ..., neurons] and one rank per segment");
    n_ = bounds.back();
    rank_count_.assign(P, 0);
    rank_segments_.assign(P, {});
    seg_base_.resize(ranks.size());
    for (size_t s = 0; s < ranks.size(); ++s) {
      if (bounds[s + 1] <= bounds[s]) throw std::invalid_argument("placement segments: bounds must increase");
      if (ranks[s] < 0 || ranks[s] >= P)
        throw std::invalid_argument("placement segments: segment " + std::to_string(s) + " is given rank " +
                                    std::to_string(ranks[s]) + ", outside [0, " + std::to_string(P) + ")");
      seg_base_[s] = rank_count_[ranks[s]];
      rank_count_[ranks[s]] += bounds[s + 1] - bounds[s];
      rank_segments_[ranks[s]].push_back(uint32_t(s));
    }
    for (int r = 0; r < P; ++r)
      if (rank_count_[r] == 0)
        throw std::invalid_argument("placement segments: rank " + std::to_string(r) + " holds no neuron");
  }

  // The same placement seen from a sub-communicator whose rank i is world rank world_ranks[i]:
  // rank arguments and results are then sub-communicator ranks (rank_of gives -1 for a neuron
  // outside it). Threads and rank-local indices are unchanged.
  Placement restricted(const std::vector<int>& world_ranks) const {
    Placement p = *this;
    p.to_world_ = world_ranks;
    p.from_world_.assign(P_, -1);
    for (size_t i = 0; i < world_ranks.size(); ++i) p.from_world_[world_ranks[i]] = int(i);
    return p;
  }

  // Neurons on a rank, and the rank-local index of a neuron (gid order within the rank).
  uint64_t rank_count(int r) const { return world_count(world(r)); }
  int rank_of(uint64_t g) const {
    const int w = world_rank_of(g);
    return from_world_.empty() ? w : from_world_[w];
  }
  uint64_t rank_index(uint64_t g) const {
    switch (kind_) {
      case Kind::round_robin: return g / P_;
      case Kind::block: return g - block_start(world_rank_of(g), P_, n_);
      default: { const size_t s = segment_of(g); return seg_base_[s] + (g - bounds_[s]); }
    }
  }
  uint64_t rank_gid(int r, uint64_t j) const { return world_rank_gid(world(r), j); }

  uint64_t thread_count(int r, int t) const {
    const uint64_t m = rank_count(r);
    return kind_ == Kind::round_robin ? share_rr(m, T_, t) : block_start(t + 1, T_, m) - block_start(t, T_, m);
  }
  Location locate(uint64_t g) const {
    const int r = rank_of(g);
    const uint64_t j = rank_index(g), m = world_count(world_rank_of(g));
    if (kind_ == Kind::round_robin) return {r, int(j % T_), j / T_};
    const int t = block_of(j, T_, m);
    return {r, t, j - block_start(t, T_, m)};
  }
  uint64_t gid(int r, int t, uint64_t k) const {
    const uint64_t m = rank_count(r);
    const uint64_t j = kind_ == Kind::round_robin ? k * T_ + t : block_start(t, T_, m) + k;
    return rank_gid(r, j);
  }

  // The world ranks holding at least one gid of [first, first + count), ascending.
  std::vector<int> ranks_of_range(uint64_t first, uint64_t count) const {
    std::vector<int> out;
    if (count == 0) return out;
    if (kind_ == Kind::round_robin) {
      for (uint64_t i = 0; i < std::min<uint64_t>(count, P_); ++i) out.push_back(int((first + i) % P_));
    } else if (kind_ == Kind::block) {
      for (int r = world_rank_of(first); r <= world_rank_of(first + count - 1); ++r) out.push_back(r);
    } else {
      for (size_t s = segment_of(first); s < seg_rank_.size() && bounds_[s] < first + count; ++s)
        out.push_back(seg_rank_[s]);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  int ranks() const { return to_world_.empty() ? P_ : int(to_world_.size()); }
  int threads() const { return T_; }
  Kind kind() const { return kind_; }

 private:
  int world(int r) const { return to_world_.empty() ? r : to_world_[r]; }
  uint64_t world_count(int r) const {
    switch (kind_) {
      case Kind::round_robin: return share_rr(n_, P_, r);
      case Kind::block: return block_start(r + 1, P_, n_) - block_start(r, P_, n_);
      default: return rank_count_[r];
    }
  }
  int world_rank_of(uint64_t g) const {
    switch (kind_) {
      case Kind::round_robin: return int(g % P_);
      case Kind::block: return block_of(g, P_, n_);
      default: return seg_rank_[segment_of(g)];
    }
  }
  uint64_t world_rank_gid(int r, uint64_t j) const {
    switch (kind_) {
      case Kind::round_robin: return j * P_ + r;
      case Kind::block: return block_start(r, P_, n_) + j;
      default: {
        // The rank's segment holding its j-th neuron: the last with base <= j.
        const auto& segs = rank_segments_[r];
        size_t lo = 0, hi = segs.size();
        while (hi - lo > 1) {
          const size_t mid = (lo + hi) / 2;
          (seg_base_[segs[mid]] <= j ? lo : hi) = mid;
        }
        const uint32_t s = segs[lo];
        return bounds_[s] + (j - seg_base_[s]);
      }
    }
  }
  size_t segment_of(uint64_t g) const {
    return size_t(std::upper_bound(bounds_.begin(), bounds_.end(), g) - bounds_.begin()) - 1;
  }
  static uint64_t share_rr(uint64_t n, uint64_t parts, uint64_t i) { return n > i ? (n - i + parts - 1) / parts : 0; }
  // Balanced blocks: the first n % parts blocks hold one extra element.
  static uint64_t block_start(uint64_t i, uint64_t parts, uint64_t n) {
    return i * (n / parts) + std::min<uint64_t>(i, n % parts);
  }
  static int block_of(uint64_t g, uint64_t parts, uint64_t n) {
    const uint64_t q = n / parts, rem = n % parts;
    if (g < rem * (q + 1)) return int(g / (q + 1));
    return int(rem + (g - rem * (q + 1)) / q);
  }

  Kind kind_ = Kind::round_robin;
  uint64_t n_ = 0;
  int P_, T_;
  // segments
  std::vector<uint64_t> bounds_, seg_base_, rank_count_;
  std::vector<int32_t> seg_rank_;
  std::vector<std::vector<uint32_t>> rank_segments_;
  // restricted view: sub-communicator rank <-> world rank
  std::vector<int> to_world_, from_world_;
};

}  // namespace ranvier
