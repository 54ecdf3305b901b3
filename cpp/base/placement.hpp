// Where each neuron lives: global id <-> (rank, thread, thread-local index), by arithmetic.
// Every scheme keeps gid order inside every rank and every thread, so each population is a
// contiguous range of a thread's neurons.
//   round-robin: gid g on rank g % P (the conventional scheme: every area on every rank);
//   block:       P balanced contiguous blocks;
//   segments:    contiguous gid ranges, each given a rank (areas on ranks, area groups, packings
//                computed from the model's areas); a rank may hold several ranges.
//   random:      each population's neurons shuffled by a bijection keyed by the seed (no table):
//                neuron i of population p gets position q = pi_p(i), and position q goes to rank
//                q % P; a rank holds its populations in order, each in position order (q / P).
//                Populations stay contiguous, gid order within them does not.
// Threads split a rank's neurons round-robin (round-robin, random) or in balanced blocks (the others).
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ranvier {

// A bijection of [0, n) keyed by `key`: a four-round Feistel network on the smallest power of
// two >= n (at least 4), walked in cycles until the value lies below n (fewer than 2 rounds of
// walking on average, as the power of two is below 2n).
class KeyedPermutation {
 public:
  KeyedPermutation() = default;
  KeyedPermutation(uint64_t n, uint64_t key) : n_(n), key_(key) {
    int bits = 2;
    while (bits < 64 && (uint64_t(1) << bits) < n) ++bits;
    high_ = bits / 2;
    low_ = bits - high_;
  }
  uint64_t operator()(uint64_t i) const {
    do i = forward(i); while (i >= n_);
    return i;
  }
  uint64_t inverse(uint64_t q) const {
    do q = backward(q); while (q >= n_);
    return q;
  }

 private:
  static uint64_t mask(int w) { return w >= 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1; }
  uint64_t round(int k, uint64_t v) const {  // splitmix64's finaliser of (key, round, half)
    uint64_t z = key_ ^ (v * 0x9E3779B97F4A7C15ull + uint64_t(k) * 0xD1B54A32D192ED03ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // (L, R) of widths (wl, wr) -> (R, L ^ F(R)) of widths (wr, wl); four rounds bring the widths back.
  uint64_t forward(uint64_t x) const {
    uint64_t L = x >> low_, R = x & mask(low_);
    int wl = high_, wr = low_;
    for (int k = 0; k < 4; ++k) {
      const uint64_t nr = L ^ (round(k, R) & mask(wl));
      L = R;
      R = nr;
      std::swap(wl, wr);
    }
    return (L << wr) | R;
  }
  uint64_t backward(uint64_t y) const {
    uint64_t L = y >> low_, R = y & mask(low_);
    int wl = high_, wr = low_;
    for (int k = 3; k >= 0; --k) {
      const uint64_t pl = R ^ (round(k, L) & mask(wr));
      R = L;
      L = pl;
      std::swap(wl, wr);
    }
    return (L << wr) | R;
  }
  uint64_t n_ = 1, key_ = 0;
  int high_ = 1, low_ = 1;
};

struct Location { int rank; int thread; uint64_t index; };

class Placement {
 public:
  enum class Kind { round_robin, block, segments, random };

  Placement(const std::string& name, uint64_t neurons, int ranks, int threads)
      : n_(neurons), P_(ranks), T_(threads) {
    if (name == "round-robin") kind_ = Kind::round_robin;
    else if (name == "block") kind_ = Kind::block;
    else throw std::invalid_argument("placement must be 'round-robin', 'block', 'random' or 'segments', got '" + name + "'");
  }

  // Random placement of populations [first[p], first[p + 1]) (first ends at the neuron count),
  // each shuffled by its own keyed bijection (a key per population, from `seed`).
  static Placement random(const std::vector<uint64_t>& first, int P, int threads, uint64_t seed) {
    if (first.size() < 2 || first.front() != 0)
      throw std::invalid_argument("placement random: need population bounds [0, ..., neurons]");
    Placement pl("round-robin", first.back(), P, threads);
    pl.kind_ = Kind::random;
    pl.pop_first_ = first;
    const size_t pops = first.size() - 1;
    pl.shuffle_.resize(pops);
    for (size_t p = 0; p < pops; ++p) {
      if (first[p + 1] < first[p]) throw std::invalid_argument("placement random: population bounds must not decrease");
      pl.shuffle_[p] = KeyedPermutation(first[p + 1] - first[p],
                                        seed * 0x2545F4914F6CDD1Dull ^ (uint64_t(p) + 1) * 0x9E3779B97F4A7C15ull ^ 0x52414E44ull);
    }
    // base_[r][p]: rank r's local index of its first neuron of population p (row of pops + 1)
    pl.base_.assign(size_t(P) * (pops + 1), 0);
    for (int r = 0; r < P; ++r)
      for (size_t p = 0; p < pops; ++p)
        pl.base_[r * (pops + 1) + p + 1] = pl.base_[r * (pops + 1) + p] + share_rr(first[p + 1] - first[p], P, r);
    return pl;
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
      case Kind::random: {
        const size_t p = population_of(g);
        const uint64_t q = shuffle_[p](g - pop_first_[p]);
        return base_[(q % P_) * pop_first_.size() + p] + q / P_;
      }
      default: { const size_t s = segment_of(g); return seg_base_[s] + (g - bounds_[s]); }
    }
  }
  uint64_t rank_gid(int r, uint64_t j) const { return world_rank_gid(world(r), j); }

  uint64_t thread_count(int r, int t) const {
    const uint64_t m = rank_count(r);
    return threads_round_robin() ? share_rr(m, T_, t) : block_start(t + 1, T_, m) - block_start(t, T_, m);
  }
  Location locate(uint64_t g) const {
    const int r = rank_of(g);
    const uint64_t j = rank_index(g), m = world_count(world_rank_of(g));
    if (threads_round_robin()) return {r, int(j % T_), j / T_};
    const int t = block_of(j, T_, m);
    return {r, t, j - block_start(t, T_, m)};
  }
  uint64_t gid(int r, int t, uint64_t k) const {
    const uint64_t m = rank_count(r);
    const uint64_t j = threads_round_robin() ? k * T_ + t : block_start(t, T_, m) + k;
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
    } else if (kind_ == Kind::random) {  // look until every rank is seen (about P ln P neurons)
      std::vector<uint8_t> seen(P_, 0);
      int distinct = 0;
      for (uint64_t g = first; g < first + count && distinct < P_; ++g) {
        const int r = world_rank_of(g);
        if (!seen[r]) { seen[r] = 1; ++distinct; out.push_back(r); }
      }
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
      case Kind::random: return base_[(size_t(r) + 1) * pop_first_.size() - 1];
      default: return rank_count_[r];
    }
  }
  int world_rank_of(uint64_t g) const {
    switch (kind_) {
      case Kind::round_robin: return int(g % P_);
      case Kind::block: return block_of(g, P_, n_);
      case Kind::random: {
        const size_t p = population_of(g);
        return int(shuffle_[p](g - pop_first_[p]) % P_);
      }
      default: return seg_rank_[segment_of(g)];
    }
  }
  uint64_t world_rank_gid(int r, uint64_t j) const {
    switch (kind_) {
      case Kind::round_robin: return j * P_ + r;
      case Kind::block: return block_start(r, P_, n_) + j;
      case Kind::random: {  // the population whose share on rank r holds its j-th neuron
        const size_t row = pop_first_.size();
        const uint64_t* base = base_.data() + size_t(r) * row;
        const size_t p = size_t(std::upper_bound(base, base + row, j) - base) - 1;
        return pop_first_[p] + shuffle_[p].inverse((j - base[p]) * P_ + r);
      }
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
  bool threads_round_robin() const { return kind_ == Kind::round_robin || kind_ == Kind::random; }
  size_t population_of(uint64_t g) const {
    return size_t(std::upper_bound(pop_first_.begin(), pop_first_.end(), g) - pop_first_.begin()) - 1;
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
  // random
  std::vector<uint64_t> pop_first_, base_;
  std::vector<KeyedPermutation> shuffle_;
  // restricted view: sub-communicator rank <-> world rank
  std::vector<int> to_world_, from_world_;
};

}  // namespace ranvier
