// Where each neuron lives: global id <-> (rank, thread, thread-local index), by arithmetic.
// Both schemes keep gid order inside every rank and every thread, so each population is a
// contiguous range of a thread's neurons.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ranvier {

struct Location { int rank; int thread; uint64_t index; };

class Placement {
 public:
  enum class Kind { round_robin, block };

  Placement(const std::string& name, uint64_t neurons, int ranks, int threads)
      : n_(neurons), P_(ranks), T_(threads) {
    if (name == "round-robin") kind_ = Kind::round_robin;
    else if (name == "block") kind_ = Kind::block;
    else throw std::invalid_argument("placement must be 'round-robin' or 'block', got '" + name + "'");
  }

  // Neurons on a rank, and the rank-local index of a neuron (gid order within the rank).
  uint64_t rank_count(int r) const {
    return kind_ == Kind::round_robin ? share_rr(n_, P_, r) : block_start(r + 1, P_, n_) - block_start(r, P_, n_);
  }
  int rank_of(uint64_t g) const { return kind_ == Kind::round_robin ? int(g % P_) : block_of(g, P_, n_); }
  uint64_t rank_index(uint64_t g) const {
    return kind_ == Kind::round_robin ? g / P_ : g - block_start(rank_of(g), P_, n_);
  }
  uint64_t rank_gid(int r, uint64_t j) const {
    return kind_ == Kind::round_robin ? j * P_ + r : block_start(r, P_, n_) + j;
  }

  // Threads split a rank's neurons the same way ranks split the network.
  uint64_t thread_count(int r, int t) const {
    const uint64_t m = rank_count(r);
    return kind_ == Kind::round_robin ? share_rr(m, T_, t) : block_start(t + 1, T_, m) - block_start(t, T_, m);
  }
  Location locate(uint64_t g) const {
    const int r = rank_of(g);
    const uint64_t j = rank_index(g), m = rank_count(r);
    if (kind_ == Kind::round_robin) return {r, int(j % T_), j / T_};
    const int t = block_of(j, T_, m);
    return {r, t, j - block_start(t, T_, m)};
  }
  uint64_t gid(int r, int t, uint64_t k) const {
    const uint64_t m = rank_count(r);
    const uint64_t j = kind_ == Kind::round_robin ? k * T_ + t : block_start(t, T_, m) + k;
    return rank_gid(r, j);
  }

  int ranks() const { return P_; }
  int threads() const { return T_; }

 private:
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
  uint64_t n_;
  int P_, T_;
};

}  // namespace ranvier
