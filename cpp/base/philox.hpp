// Philox4x32-10 (Salmon et al., SC'11): a counter-based generator. Every random number in
// Ranvier is a pure function of (seed, counter), and counters are built from global neuron
// ids, projection indices and step numbers, never from ranks, threads or processing order.
#pragma once
#include <array>
#include <cstdint>
#include <cstddef>
#if defined(__x86_64__)
#include <immintrin.h>  // also for the AVX-512 kernels, compiled by target attribute in any build
#endif

#include "base/simd.hpp"

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
// outdegree: the targets of a source of a fixed out-degree projection (keyed by the source).
// parameter: a neuron's parameter drawn from a distribution (tag: which parameter).
// transmit: whether a stochastic synapse transmits a spike (id: the target, tag: the projection,
// a: the synapse's index onto the target, block: the spike's step; cpp/synapses/bernoulli.cpp).
// release: the release sites of a quantal synapse (as transmit, a: index << 8 | block of 4
// uniforms; cpp/synapses/quantal_stp.cpp).
// synapse_model: the random numbers of a generated synapse model at a pre-synaptic spike (as
// transmit; at most four: one block; ranvier.nestml).
enum class Purpose : uint32_t {
  connect = 1, synapse = 2, external = 3, initial = 4, firing = 5, indegree = 6, outdegree = 7, parameter = 8,
  noise_current = 9, transmit = 10, release = 11, synapse_model = 12
};

// The counter of every draw: {id low 32 bits, id high 8 bits | tag << 8 | purpose << 24, a, block}.
// id is a global neuron id; tag a projection or drive index; a a synapse index or cycle.
inline Counter make_counter(uint64_t id, Purpose purpose, uint32_t tag, uint32_t a, uint32_t block) {
  return {uint32_t(id), uint32_t((id >> 32) & 0xFFu) | ((tag & 0xFFFFu) << 8) | (uint32_t(purpose) << 24), a, block};
}

// Uniform in the open interval (0, 1) from one 32-bit word.
// Written as (word - 2^31, a signed int) + 2^31 + 1/2, which is exact and equals double(word) + 1/2:
// signed conversions vectorise in one instruction, unsigned ones do not before AVX-512.
inline double to_uniform(uint32_t word) {
  return (double(int32_t(word ^ 0x80000000u)) + 2147483648.5) * 0x1p-32;
}

// Block `block` for each of the counters (id_lo[i] | id_hi[i] << 32, purpose, tag, a), i < n,
// into out[w * stride + i]: 16 counters at a time with AVX2 (the last 1-15 as one partial group),
// one at a time without it. Bit-identical to philox4x32_10 (tests pin both against the published
// vectors).
#if defined(__AVX2__)
namespace detail {
// 32x32 -> 64-bit products of 8 lanes with one constant, split into high and low words: the high
// words from the even and odd lanes' 64-bit products, the low words in one multiply (a shift and
// a blend before: 10 % of Philox's instructions).
inline void mulhilo8(__m256i a, __m256i m, __m256i& hi, __m256i& lo) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  lo = _mm256_mullo_epi32(a, m);
  hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

// The ten round keys, broadcast once per call (not in every round of every group of lanes).
struct RoundKeys8 {
  __m256i k0[10], k1[10];
  explicit RoundKeys8(Key key) {
    k0[0] = _mm256_set1_epi32(int(key[0]));
    k1[0] = _mm256_set1_epi32(int(key[1]));
    const __m256i w0 = _mm256_set1_epi32(int(0x9E3779B9u)), w1 = _mm256_set1_epi32(int(0xBB67AE85u));
    for (int r = 1; r < 10; ++r) {
      k0[r] = _mm256_add_epi32(k0[r - 1], w0);
      k1[r] = _mm256_add_epi32(k1[r - 1], w1);
    }
  }
};

// One round of Philox4x32 on 8 counters (words x0..x3 of each lane), with that round's keys.
inline void round8(__m256i& x0, __m256i& x1, __m256i& x2, __m256i& x3, __m256i k0, __m256i k1) {
  const __m256i M0 = _mm256_set1_epi32(int(0xD2511F53u)), M1 = _mm256_set1_epi32(int(0xCD9E8D57u));
  __m256i hi0, lo0, hi1, lo1;
  mulhilo8(x0, M0, hi0, lo0);
  mulhilo8(x2, M1, hi1, lo1);
  x0 = _mm256_xor_si256(_mm256_xor_si256(hi1, x1), k0);
  x2 = _mm256_xor_si256(_mm256_xor_si256(hi0, x3), k1);
  x1 = lo1;
  x3 = lo0;
}

// The ten rounds on 8 counters.
inline void rounds8(__m256i& x0, __m256i& x1, __m256i& x2, __m256i& x3, const RoundKeys8& k) {
#pragma GCC unroll 10
  for (int round = 0; round < 10; ++round) round8(x0, x1, x2, x3, k.k0[round], k.k1[round]);
}

// The same rounds on two groups of 8 counters, round by round: one group's round is a chain of
// dependent instructions, and two interleaved hide each other's latency (AMD EPYC: 3.4 -> 2.3 ns
// a block).
inline void rounds8x2(__m256i& a0, __m256i& a1, __m256i& a2, __m256i& a3, __m256i& b0, __m256i& b1, __m256i& b2,
                      __m256i& b3, const RoundKeys8& k) {
#pragma GCC unroll 10
  for (int round = 0; round < 10; ++round) {
    round8(a0, a1, a2, a3, k.k0[round], k.k1[round]);
    round8(b0, b1, b2, b3, k.k0[round], k.k1[round]);
  }
}

// Philox on lanes [i, n) into out[w * stride + lane]: 16 at a time (two interleaved groups), then
// the last 1-15 as one more group of 16 or 8 whose unused lanes are dropped. counters(j, valid, x)
// sets x[0..3] to the counters of lanes j .. j + 7, of which only the first `valid` exist.
template <class Counters>
inline void blocks_avx2(size_t i, size_t n, Counters counters, const RoundKeys8& keys, uint32_t* __restrict out,
                        size_t stride) {
  __m256i a[4], b[4];
  for (; i + 16 <= n; i += 16) {
    counters(i, size_t(8), a);
    counters(i + 8, size_t(8), b);
    rounds8x2(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], keys);
    for (int w = 0; w < 4; ++w) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + w * stride + i), a[w]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + w * stride + i + 8), b[w]);
    }
  }
  const size_t rest = n - i;
  if (rest == 0) return;
  alignas(32) uint32_t lanes[4][16];
  counters(i, rest < 8 ? rest : 8, a);
  if (rest > 8) {
    counters(i + 8, rest - 8, b);
    rounds8x2(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], keys);
    for (int w = 0; w < 4; ++w) _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[w] + 8), b[w]);
  } else {
    rounds8(a[0], a[1], a[2], a[3], keys);
  }
  for (int w = 0; w < 4; ++w) _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[w]), a[w]);
  for (int w = 0; w < 4; ++w)
    for (size_t l = 0; l < rest; ++l) out[w * stride + i + l] = lanes[w][l];
}
}  // namespace detail
#endif

#if defined(RANVIER_HAVE_AVX512_KERNELS)
namespace detail {
RANVIER_AVX512 inline void mulhilo16(__m512i a, __m512i m, __m512i& hi, __m512i& lo) {
  const __m512i even = _mm512_mul_epu32(a, m);
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
  lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
  hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
}

RANVIER_AVX512 inline void rounds16(__m512i& x0, __m512i& x1, __m512i& x2, __m512i& x3, Key key) {
  const __m512i M0 = _mm512_set1_epi32(int(0xD2511F53u)), M1 = _mm512_set1_epi32(int(0xCD9E8D57u));
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    __m512i hi0, lo0, hi1, lo1;
    mulhilo16(x0, M0, hi0, lo0);
    mulhilo16(x2, M1, hi1, lo1);
    x0 = _mm512_xor_si512(_mm512_xor_si512(hi1, x1), _mm512_set1_epi32(int(k0)));
    x2 = _mm512_xor_si512(_mm512_xor_si512(hi0, x3), _mm512_set1_epi32(int(k1)));
    x1 = lo1;
    x3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

RANVIER_AVX512 inline void store16(uint32_t* out, size_t stride, size_t i, __m512i x0, __m512i x1, __m512i x2,
                                   __m512i x3) {
  _mm512_storeu_si512(out + i, x0);
  _mm512_storeu_si512(out + stride + i, x1);
  _mm512_storeu_si512(out + 2 * stride + i, x2);
  _mm512_storeu_si512(out + 3 * stride + i, x3);
}

// The first multiple of 16 lanes of philox4x32_10_lanes; returns how many were done.
RANVIER_AVX512 inline size_t lanes16(const uint32_t* __restrict id_lo, const uint32_t* __restrict id_hi, size_t n,
                                     uint32_t high, uint32_t a, uint32_t block, Key key, uint32_t* __restrict out,
                                     size_t stride) {
  const __m512i hi_tag = _mm512_set1_epi32(int(high)), mask8 = _mm512_set1_epi32(0xFF);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512i x0 = _mm512_loadu_si512(id_lo + i);
    __m512i x1 = _mm512_or_si512(_mm512_and_si512(_mm512_loadu_si512(id_hi + i), mask8), hi_tag);
    __m512i x2 = _mm512_set1_epi32(int(a)), x3 = _mm512_set1_epi32(int(block));
    rounds16(x0, x1, x2, x3, key);
    store16(out, stride, i, x0, x1, x2, x3);
  }
  return i;
}

// The first multiple of 16 lanes of philox4x32_10_series.
RANVIER_AVX512 inline size_t series16(Counter base, int word, size_t n, Key key, uint32_t* __restrict out,
                                      size_t stride) {
  const __m512i step = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512i x[4];
    for (int w = 0; w < 4; ++w) x[w] = _mm512_set1_epi32(int(base[w]));
    x[word] = _mm512_add_epi32(_mm512_set1_epi32(int(base[word] + uint32_t(i))), step);
    rounds16(x[0], x[1], x[2], x[3], key);
    store16(out, stride, i, x[0], x[1], x[2], x[3]);
  }
  return i;
}
}  // namespace detail
#endif

inline void philox4x32_10_lanes(const uint32_t* __restrict id_lo, const uint32_t* __restrict id_hi, size_t n,
                                Purpose purpose, uint32_t tag, uint32_t a, uint32_t block, Key key,
                                uint32_t* __restrict out, size_t stride) {
  const uint32_t high = ((tag & 0xFFFFu) << 8) | (uint32_t(purpose) << 24);
  size_t i = 0;
#if defined(RANVIER_HAVE_AVX512_KERNELS)
  if (avx512_kernels()) i = detail::lanes16(id_lo, id_hi, n, high, a, block, key, out, stride);
#endif
#if defined(__AVX2__)
  const __m256i hi_tag = _mm256_set1_epi32(int(high)), mask8 = _mm256_set1_epi32(0xFF);
  detail::blocks_avx2(i, n, [&](size_t j, size_t valid, __m256i (&x)[4]) {
    __m256i lo, hi;
    if (valid == 8) {
      lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(id_lo + j));
      hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(id_hi + j));
    } else {  // the last lanes: no reads past n
      alignas(32) uint32_t l[8] = {}, h[8] = {};
      for (size_t k = 0; k < valid; ++k) { l[k] = id_lo[j + k]; h[k] = id_hi[j + k]; }
      lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(l));
      hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(h));
    }
    x[0] = lo;
    x[1] = _mm256_or_si256(_mm256_and_si256(hi, mask8), hi_tag);
    x[2] = _mm256_set1_epi32(int(a));
    x[3] = _mm256_set1_epi32(int(block));
  }, detail::RoundKeys8(key), out, stride);
  i = n;
#endif
  for (; i < n; ++i) {
    const Counter b = philox4x32_10({id_lo[i], (id_hi[i] & 0xFFu) | high, a, block}, key);
    for (int w = 0; w < 4; ++w) out[w * stride + i] = b[w];
  }
}

// Blocks of the counters base + i in counter word `word` (2 or 3), i < n, into
// out[w * stride + i]: a synapse's block (word 2, the synapse index) or the consecutive blocks of
// one stream (word 3). 16 lanes at a time with AVX2, as philox4x32_10_lanes; bit-identical to
// philox4x32_10.
inline void philox4x32_10_series(Counter base, int word, size_t n, Key key, uint32_t* __restrict out, size_t stride) {
  size_t i = 0;
#if defined(RANVIER_HAVE_AVX512_KERNELS)
  if (avx512_kernels()) i = detail::series16(base, word, n, key, out, stride);
#endif
#if defined(__AVX2__)
  const __m256i step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  detail::blocks_avx2(i, n, [&](size_t j, size_t, __m256i (&x)[4]) {
    for (int w = 0; w < 4; ++w) x[w] = _mm256_set1_epi32(int(base[w]));
    x[word] = _mm256_add_epi32(_mm256_set1_epi32(int(base[word] + uint32_t(j))), step);
  }, detail::RoundKeys8(key), out, stride);
  i = n;
#endif
  for (; i < n; ++i) {
    Counter c = base;
    c[word] += uint32_t(i);
    const Counter b = philox4x32_10(c, key);
    for (int w = 0; w < 4; ++w) out[w * stride + i] = b[w];
  }
}

// A sequence of 32-bit words from consecutive Philox blocks of one counter.
class Stream {
 public:
  Stream(Key key, uint64_t id, Purpose purpose, uint32_t tag, uint32_t a)
      : key_(key), ctr_(make_counter(id, purpose, tag, a, 0)) {}
  // The same stream when its block 0 is already drawn (`first`, e.g. by a vector pass).
  Stream(Key key, uint64_t id, Purpose purpose, uint32_t tag, uint32_t a, const Counter& first)
      : key_(key), ctr_(make_counter(id, purpose, tag, a, 1)), block_(first), pos_(0) {}
  uint32_t next() {
    if (pos_ == 4) { block_ = philox4x32_10(ctr_, key_); ++ctr_[3]; pos_ = 0; }
    return block_[pos_++];
  }
  // Uniform in the open interval (0, 1).
  double uniform() { return to_uniform(next()); }

 private:
  Key key_;
  Counter ctr_;
  Counter block_{};
  int pos_ = 4;
};

inline Key key_from_seed(uint64_t seed) { return {uint32_t(seed), uint32_t(seed >> 32)}; }

}  // namespace ranvier
