// Philox4x32-10 (Salmon et al., SC'11): a counter-based generator. Every random number in
// Ranvier is a pure function of (seed, counter), and counters are built from global neuron
// ids, projection indices and step numbers, never from ranks, threads or processing order.
#pragma once
#include <array>
#include <cstdint>

namespace ranvier {

using Counter = std::array<uint32_t, 4>;
using Key = std::array<uint32_t, 2>;

inline Counter philox4x32_10(Counter x, Key k) {
  constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  constexpr uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) { k[0] += W0; k[1] += W1; }
    const uint64_t p0 = uint64_t(M0) * x[0];
    const uint64_t p1 = uint64_t(M1) * x[2];
    x = {uint32_t(p1 >> 32) ^ x[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ x[3] ^ k[1], uint32_t(p0)};
  }
  return x;
}

// What a counter is for; occupies the top byte of counter word 1.
enum class Purpose : uint32_t { connect = 1, synapse = 2, external = 3, initial = 4 };

// A sequence of 32-bit words from consecutive Philox blocks of one keyed counter.
// Counter: {id low 32 bits, id high 8 bits | tag << 8 | purpose << 24, a, block}.
class Stream {
 public:
  Stream(Key key, uint64_t id, Purpose purpose, uint32_t tag, uint32_t a)
      : key_(key), ctr_{uint32_t(id), uint32_t((id >> 32) & 0xFFu) | ((tag & 0xFFFFu) << 8) |
                                          (uint32_t(purpose) << 24), a, 0} {}
  uint32_t next() {
    if (pos_ == 4) { block_ = philox4x32_10(ctr_, key_); ++ctr_[3]; pos_ = 0; }
    return block_[pos_++];
  }
  // Uniform in the open interval (0, 1).
  double uniform() { return (double(next()) + 0.5) * 0x1p-32; }

 private:
  Key key_;
  Counter ctr_;
  Counter block_{};
  int pos_ = 4;
};

inline Key key_from_seed(uint64_t seed) { return {uint32_t(seed), uint32_t(seed >> 32)}; }

}  // namespace ranvier
