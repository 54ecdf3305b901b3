// The external Poisson drive: events drawn on the fly per window of the minimum delay, keyed by
// (neuron, drive, window), added into the input buffer's rows before the update reads them.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/engine.hpp"
#include "base/philox.hpp"
#if defined(__x86_64__)
#include <immintrin.h>  // also for the AVX-512 kernels, compiled by target attribute in any build
#endif

namespace ranvier {

namespace {
#if defined(RANVIER_HAVE_AVX512_KERNELS)
// The drive's events 0-2 of m neurons, slot by slot, as (neuron, word) pairs: word j + 1 of
// block 0 for the neurons whose count exceeds j. Returns how many were listed.
RANVIER_AVX512 size_t list_events_avx512(const uint32_t* __restrict count, const uint32_t* __restrict words, uint64_t m,
                                         uint32_t* __restrict ev_neuron, uint32_t* __restrict ev_word) {
  size_t n = 0;
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (uint32_t j = 0; j < 3; ++j) {
    const __m512i slot = _mm512_set1_epi32(int(j));
    const uint32_t* wj = words + (j + 1) * m;
    uint64_t i = 0;
    for (; i + 16 <= m; i += 16) {
      const __mmask16 has = _mm512_cmpgt_epu32_mask(_mm512_loadu_si512(count + i), slot);
      // Compress in registers and store all 16 lanes (the lists have room): a compress straight
      // to memory is microcoded and slow on some CPUs (AMD Zen 4).
      _mm512_storeu_si512(ev_neuron + n, _mm512_maskz_compress_epi32(has, _mm512_add_epi32(_mm512_set1_epi32(int(i)), lane)));
      _mm512_storeu_si512(ev_word + n, _mm512_maskz_compress_epi32(has, _mm512_loadu_si512(wj + i)));
      n += size_t(__builtin_popcount(has));
    }
    for (; i < m; ++i)
      if (count[i] > j) { ev_neuron[n] = uint32_t(i); ev_word[n] = wj[i]; ++n; }
  }
  return n;
}
#endif

// The drive's events 0-2 of neurons [first, m) as (neuron, word) pairs, neuron by neuron, after
// the n already listed: word j + 1 of block 0 for the neurons whose count exceeds j. Three pairs
// are written for every neuron and as many kept as its count needs (no branch per neuron; the
// lists have room for 3 m + 3). Returns how many are listed then, and adds to `further` how many
// events lie past the third.
size_t list_events(const uint32_t* __restrict count, const uint32_t* __restrict words, uint64_t m, uint64_t first,
                   size_t n, uint32_t* __restrict ev_neuron, uint32_t* __restrict ev_word, uint64_t& further) {
  const uint32_t* __restrict w1 = words + m;
  const uint32_t* __restrict w2 = words + 2 * m;
  const uint32_t* __restrict w3 = words + 3 * m;
  uint64_t beyond = 0;
  for (uint64_t i = first; i < m; ++i) {
    const uint32_t c = count[i];
    ev_neuron[n] = ev_neuron[n + 1] = ev_neuron[n + 2] = uint32_t(i);
    ev_word[n] = w1[i];
    ev_word[n + 1] = w2[i];
    ev_word[n + 2] = w3[i];
    n += std::min<uint32_t>(c, 3);
    beyond += std::max<uint32_t>(c, 3) - 3;
  }
  further += beyond;
  return n;
}

#if defined(__AVX2__)
// list_events_avx512 with 8 lanes: the same events, slot by slot (the sums do not depend on the
// order), 8 pairs stored for every 8 neurons and as many kept as have the slot (the lists have
// room for 3 m + 8); the last m % 8 neurons by list_events, which also gives `further`.
size_t list_events_avx2(const uint32_t* __restrict count, const uint32_t* __restrict words, uint64_t m,
                        uint32_t* __restrict ev_neuron, uint32_t* __restrict ev_word, uint64_t& further) {
  size_t n = 0;
  const uint64_t whole = m / 8 * 8;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), three = _mm256_set1_epi32(3);
  __m256i beyond = _mm256_setzero_si256();
  for (uint32_t j = 0; j < 3; ++j) {
    const __m256i slot = _mm256_set1_epi32(int(j));
    const uint32_t* wj = words + (j + 1) * m;
    for (uint64_t i = 0; i < whole; i += 8) {
      const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(count + i));
      if (j == 0) beyond = _mm256_add_epi32(beyond, _mm256_sub_epi32(_mm256_max_epu32(c, three), three));
      // Counts are far below 2^31: a signed compare.
      const uint32_t has = uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(c, slot))));
      const __m256i kept = _mm256_load_si256(reinterpret_cast<const __m256i*>(kCompress.lanes[has]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(ev_neuron + n),
                          _mm256_permutevar8x32_epi32(_mm256_add_epi32(_mm256_set1_epi32(int(i)), lane), kept));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(ev_word + n),
                          _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wj + i)), kept));
      n += size_t(__builtin_popcount(has));
    }
  }
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), beyond);
  further = 0;
  for (uint32_t x : lanes) further += x;
  return list_events(count, words, m, whole, n, ev_neuron, ev_word, further);
}
#endif

// The indices of the neurons with more than three events, ascending, into `out`; returns how
// many. Few are (about 4 % at dpsnn's rate): eight counts are compared at once and only the set
// bits of the mask visited, instead of a store and an add for every neuron.
size_t list_more_than_three(const uint32_t* __restrict count, uint64_t m, uint32_t* __restrict out) {
  size_t k = 0;
  uint64_t i = 0;
#if defined(__AVX2__)
  const __m256i three = _mm256_set1_epi32(3);  // counts are far below 2^31: a signed compare
  for (; i + 8 <= m; i += 8) {
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(count + i));
    const uint32_t bits = uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(c, three))));
    k += append_lanes(bits, uint32_t(i), out + k);
  }
#endif
  for (; i < m; ++i) {
    out[k] = uint32_t(i);
    k += count[i] > 3;
  }
  return k;
}

// Poisson counts of m words against a table's thresholds (PoissonTable::thresholds), capped at
// kCounts; returns whether any count reached the cap (the caller then draws those exactly).
constexpr uint32_t kCounts = PoissonTable::kCounted;

#if defined(__AVX2__)
// Poisson counts of 8 words, exactly those of the scalar loop in poisson_counts: with the word
// capped at 2^32 - 2, word >= T[j] is (word + 1) > T[j] without overflow, a signed compare once
// both sides are offset by 2^31. One compare and one add per threshold, the threshold an operand
// from memory (a max, a compare and a subtract before).
struct ThresholdsAvx2 {
  __m256i offset[kCounts];  // T[j] + 2^31
  explicit ThresholdsAvx2(const uint32_t* T) {
    for (uint32_t j = 0; j < kCounts; ++j) offset[j] = _mm256_set1_epi32(int(T[j] ^ 0x80000000u));
  }
};
// The counts of 8 words; `capped` is all ones in the lanes whose count reached kCounts (the
// caller draws those exactly).
inline __m256i counts8(__m256i word, const ThresholdsAvx2& T, __m256i& capped) {
  const __m256i u = _mm256_add_epi32(_mm256_min_epu32(word, _mm256_set1_epi32(int(0xFFFFFFFEu))),
                                     _mm256_set1_epi32(int(0x80000001u)));  // word + 1 + 2^31
  __m256i reached = _mm256_setzero_si256();  // minus the thresholds reached
  for (uint32_t j = 0; j + 1 < kCounts; ++j) reached = _mm256_add_epi32(reached, _mm256_cmpgt_epi32(u, T.offset[j]));
  capped = _mm256_cmpgt_epi32(u, T.offset[kCounts - 1]);
  return _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_add_epi32(reached, capped));
}
#endif

#if defined(RANVIER_HAVE_AVX512_KERNELS)
// poisson_counts, 16 neurons per instruction (unsigned compares into masks).
RANVIER_AVX512 uint64_t poisson_counts_avx512(const uint32_t* __restrict w, uint64_t m, const uint32_t* T,
                                              uint32_t* __restrict count, bool& saturated) {
  const __m512i cap = _mm512_set1_epi32(int(0xFFFFFFFEu)), one = _mm512_set1_epi32(1);
  __m512i thr[kCounts];
  for (uint32_t j = 0; j < kCounts; ++j) thr[j] = _mm512_set1_epi32(int(T[j]));
  __mmask16 any = 0;
  uint64_t i = 0;
  for (; i + 16 <= m; i += 16) {
    const __m512i word = _mm512_min_epu32(_mm512_loadu_si512(w + i), cap);
    __m512i c = _mm512_setzero_si512();
    for (uint32_t j = 0; j < kCounts; ++j) c = _mm512_mask_add_epi32(c, _mm512_cmpge_epu32_mask(word, thr[j]), c, one);
    _mm512_storeu_si512(count + i, c);
    any |= _mm512_cmpeq_epi32_mask(c, _mm512_set1_epi32(int(kCounts)));
  }
  saturated = any != 0;
  return i;
}

#endif

bool poisson_counts(const uint32_t* __restrict w, uint64_t m, const uint32_t* T, uint32_t* __restrict count) {
  uint64_t i = 0;
  bool saturated = false;
#if defined(RANVIER_HAVE_AVX512_KERNELS)
  if (avx512_kernels()) i = poisson_counts_avx512(w, m, T, count, saturated);
#endif
#if defined(__AVX2__)
  const ThresholdsAvx2 thr(T);
  __m256i any = _mm256_setzero_si256();
  for (; i + 8 <= m; i += 8) {
    __m256i capped;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(count + i),
                        counts8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i)), thr, capped));
    any = _mm256_or_si256(any, capped);
  }
  saturated |= !_mm256_testz_si256(any, any);
#endif
  for (; i < m; ++i) {
    const uint32_t word = std::min(w[i], 0xFFFFFFFEu);
    uint32_t c = 0;
    for (uint32_t j = 0; j < kCounts; ++j) c += word >= T[j];
    count[i] = c;
    saturated |= c == kCounts;
  }
  return saturated;
}

// One external event from one 32-bit word w: w * L splits into the step offset within the cycle
// (high 32 bits) and a uniform for the Gaussian efficacy (low 32 bits).
inline uint64_t event_offset(uint32_t word, uint64_t L) { return (uint64_t(word) * L) >> 32; }
inline double event_uniform(uint32_t word, uint64_t L) { return to_uniform(uint32_t(uint64_t(word) * L)); }
inline int32_t to_fixed(double mean, double sd, double z, double scale) { return int32_t(std::rint((mean + sd * z) * scale)); }

// The efficacy's uniform in 2^23 cells (the top 23 of its 32 bits): the central part of the inverse
// normal takes the cell's midpoint, exact in single precision, and runs in single precision (8
// lanes of AVX2, 16 of AVX-512: in double it was half the drive's time). The kTailCells cells at
// either end (p below kNormalLow or above 1 - kNormalLow, 4.85 % of events) take the tails' formula
// in double from all 32 bits (tail_efficacy), as before.
constexpr uint32_t kCells = uint32_t(1) << 23;
constexpr uint32_t kTailCells = uint32_t(kNormalLow * double(kCells));
static_assert(double(kTailCells) / kCells < kNormalLow && double(kTailCells + 1) / kCells > kNormalLow);
inline bool cell_in_tail(int32_t cell) { return cell < int32_t(kTailCells) || cell >= int32_t(kCells - kTailCells); }

// An event's efficacy from a central cell, in the fixed point of the input. Single precision
// carries 24 bits: finer than the fixed point (2^-fraction_bits) for efficacies below
// 2^(24 - fraction_bits) (256 mV at dpsnn's 16 bits), and far finer than the spread.
inline int32_t central_efficacy(int32_t cell, float mean, float sd, float scale) {
  const float p = (float(cell) + 0.5f) * 0x1p-23f;
  return int32_t(std::rint((mean + sd * inverse_normal_central_in(p)) * scale));
}

inline int32_t tail_efficacy(uint32_t word, uint64_t L, double mean, double sd, double scale) {
  return to_fixed(mean, sd, inverse_normal_tail(event_uniform(word, L)), scale);
}

// event_offset in 32-bit lanes where L < 2^16 (the 64-bit products took a third of the events'
// instructions): with word = hi 2^16 + lo, word L / 2^32 rounds down to (hi L + (lo L >> 16)) >> 16,
// and hi L + (lo L >> 16) < (2^16 + 1) L < 2^32.
inline uint32_t event_offset_short(uint32_t word, uint32_t L) {
  return ((word >> 16) * L + (((word & 0xFFFFu) * L) >> 16)) >> 16;
}

// An event's place in the input buffer: its step's row (`stride` entries each; the buffer holds
// fewer than 2^32) and its neuron.
template <bool kShort>
inline uint32_t event_place(uint32_t word, uint64_t L, uint64_t stride, uint32_t neuron) {
  const uint32_t offset = kShort ? event_offset_short(word, uint32_t(L)) : uint32_t(event_offset(word, L));
  return offset * uint32_t(stride) + neuron;
}

// The drive's events, vectorised: each event's efficacy from the central normal, its place in
// the input buffer (step row and neuron), and whether its uniform lies in a normal tail
// (tail[i]; those few, about 5 %, are fixed by the caller with tail_efficacy).
template <bool kShort>
inline void event_terms_body(const uint32_t* __restrict words, const uint32_t* __restrict neuron, uint64_t m,
                             uint64_t L, uint64_t stride, float mean, float sd, float scale,
                             int32_t* __restrict weight, uint32_t* __restrict at, uint8_t* __restrict tail) {
  const uint32_t L32 = uint32_t(L);  // the uniform: the low 32 bits of word L
#pragma omp simd
  for (uint64_t i = 0; i < m; ++i) {
    const int32_t cell = int32_t((words[i] * L32) >> 9);
    weight[i] = central_efficacy(cell, mean, sd, scale);
    at[i] = event_place<kShort>(words[i], L, stride, neuron[i]);
    tail[i] = cell_in_tail(cell);
  }
}

inline void event_terms_any(const uint32_t* __restrict words, const uint32_t* __restrict neuron, uint64_t m,
                            uint64_t L, uint64_t stride, float mean, float sd, float scale,
                            int32_t* __restrict weight, uint32_t* __restrict at, uint8_t* __restrict tail) {
  if (L < 65536) event_terms_body<true>(words, neuron, m, L, stride, mean, sd, scale, weight, at, tail);
  else event_terms_body<false>(words, neuron, m, L, stride, mean, sd, scale, weight, at, tail);
}

#if defined(RANVIER_HAVE_AVX512_KERNELS)
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi2,prefer-vector-width=512")))
void event_terms_avx512(const uint32_t* __restrict words, const uint32_t* __restrict neuron, uint64_t m, uint64_t L,
                        uint64_t stride, float mean, float sd, float scale, int32_t* __restrict weight,
                        uint32_t* __restrict at, uint8_t* __restrict tail) {
  event_terms_any(words, neuron, m, L, stride, mean, sd, scale, weight, at, tail);
}
#endif

// Fills weight, at and tail for m events; returns the indices of the tail events in `tails`
// (branch-free appends) and their number.
size_t event_terms(const uint32_t* __restrict words, const uint32_t* __restrict neuron, uint64_t m, uint64_t L,
                   uint64_t stride, float mean, float sd, float scale, int32_t* __restrict weight,
                   uint32_t* __restrict at, uint8_t* __restrict tail, uint32_t* __restrict tails) {
#if defined(RANVIER_HAVE_AVX512_KERNELS)
  if (avx512_kernels()) event_terms_avx512(words, neuron, m, L, stride, mean, sd, scale, weight, at, tail);
  else
#endif
  event_terms_any(words, neuron, m, L, stride, mean, sd, scale, weight, at, tail);
  return flagged_indices(tail, m, tails);  // about one event in twenty (tails has room for m + 8)
}

// The events' places alone, for a drive of one efficacy.
void event_places(const uint32_t* __restrict words, const uint32_t* __restrict neuron, uint64_t m, uint64_t L,
                  uint64_t stride, uint32_t* __restrict at) {
  if (L < 65536) {
#pragma omp simd
    for (uint64_t e = 0; e < m; ++e) at[e] = event_place<true>(words[e], L, stride, neuron[e]);
  } else {
    for (uint64_t e = 0; e < m; ++e) at[e] = event_place<false>(words[e], L, stride, neuron[e]);
  }
}

}  // namespace

bool poisson_counts_of(const uint32_t* words, uint64_t m, const uint32_t* thresholds, uint32_t* count) {
  return poisson_counts(words, m, thresholds, count);
}

// External Poisson drive, drawn on the fly per window of drive_steps steps (the minimum delay:
// a cycle, or two with overlap) and keyed by (neuron, window): block 0 of a neuron's window
// gives its event count (word 0) and its first three events (words 1-3);
// event j >= 3 uses word (j-3) % 4 of block 1 + (j-3) / 4. One 32-bit word w makes one event:
// w * L splits into the step (high 32 bits, uniform over the window) and a uniform for the
// efficacy (low 32 bits). Counts vary at random, so the work is laid out in passes without
// per-neuron branches: block 0 for all neurons (AVX2), counts and first events (vectorised, rare
// cases fixed after), then the further events from a flat list.
RANVIER_PHASE void Engine::drive(ThreadState& ts, int64_t cycle) {
  // Drawn at the window's first cycle for all its steps, into the rows of those steps.
  if ((cycle * cfg_.steps_per_cycle) % cfg_.drive_steps) return;
  const uint64_t L = uint64_t(cfg_.drive_steps);
  const uint32_t window = uint32_t(cycle * cfg_.steps_per_cycle / cfg_.drive_steps);
  const uint64_t stride = ts.input_stride;
  const double scale = std::ldexp(1.0, cfg_.fraction_bits);
  const Key key = key_from_seed(cfg_.seed);
  int32_t* input = ts.input.data();
  uint64_t events = 0;
  for (uint32_t di = 0; di < cfg_.drives.size(); ++di) {
    const auto& d = cfg_.drives[di];
    if (d.n_synapses == 0 || d.rate_hz <= 0) continue;
    const PoissonTable& table = poisson_[d.target];
    const double mean = d.weight_mean, sd = d.weight_sd;
    for (const auto& range : ts.neurons.ranges) {
      if (range.population != d.target) continue;
      if (L == 1 && sd == 0) {
        events += fixed_weight_drive(ts, range, di, table, int32_t(std::rint(mean * scale)), window);
        continue;
      }
      // In chunks, so the scratch arrays below stay in L1 next to the input buffer.
      constexpr uint64_t kChunk = 512;
      for (uint64_t begin = range.begin; begin < range.end; begin += kChunk) {
        const uint64_t m = std::min(kChunk, range.end - begin);
        const uint64_t* gid = ts.neurons.gid.data() + begin;
        int32_t* in = input + begin;
        auto& words = ts.drive_words;
        auto& count = ts.drive_count;
        if (words.size() < 4 * m) { words.resize(4 * m); count.resize(m); }
        philox4x32_10_lanes(ts.neurons.gid_lo.data() + begin, ts.neurons.gid_hi.data() + begin, m,
                            Purpose::external, di, window, 0, key, words.data(), m);
        const bool saturated = poisson_counts(words.data(), m, table.thresholds(), count.data());
        // Every event as (neuron, word) in one flat list: counts of kCounts and more (rare) are
        // drawn exactly first, then events 0-2 of every neuron are listed (words 1-3 of block 0),
        // and the events past the third (rare) appended from further blocks.
        auto& ev_neuron = ts.extra_neuron;
        auto& ev_word = ts.extra_word;
        if (ev_neuron.size() < 3 * m + 8) { ev_neuron.resize(3 * m + 8); ev_word.resize(3 * m + 8); }
        if (saturated)
          for (uint64_t i = 0; i < m; ++i)
            if (count[i] == kCounts) count[i] = table.sample(to_uniform(words[i]));
        size_t n_events = 0;
        uint64_t further = 0;
#if defined(RANVIER_HAVE_AVX512_KERNELS)
        if (avx512_kernels()) {
          // The same events in another order (slot by slot; sums do not depend on it):
          // compress-stores list a slot's events for 16 neurons at once.
          for (uint64_t i = 0; i < m; ++i) further += count[i] > 3 ? count[i] - 3 : 0;
          if (ev_neuron.size() < 3 * m + further + 32) { ev_neuron.resize(3 * m + further + 32); ev_word.resize(ev_neuron.size()); }
          n_events = list_events_avx512(count.data(), words.data(), m, ev_neuron.data(), ev_word.data());
        } else
#endif
#if defined(__AVX2__)
        n_events = list_events_avx2(count.data(), words.data(), m, ev_neuron.data(), ev_word.data(), further);
#else
        n_events = list_events(count.data(), words.data(), m, 0, 0, ev_neuron.data(), ev_word.data(), further);
#endif
        if (further) {
          if (ev_neuron.size() < n_events + further) { ev_neuron.resize(n_events + further); ev_word.resize(ev_neuron.size()); }
          // The neurons with more than three events (about 4 % at dpsnn's rate), found without a
          // branch per neuron; block 1 of all of them at once (events 3-6), further blocks (more
          // than seven events: rare) one at a time. Events in the same order as neuron by neuron.
          auto& many = ts.drive_many;
          if (many.size() < 3 * m) many.resize(3 * m);
          uint32_t* many_lo = many.data() + m;
          uint32_t* many_hi = many.data() + 2 * m;
          const size_t k = list_more_than_three(count.data(), m, many.data());
          for (size_t x = 0; x < k; ++x) {
            many_lo[x] = ts.neurons.gid_lo[begin + many[x]];
            many_hi[x] = ts.neurons.gid_hi[begin + many[x]];
          }
          auto& block1 = ts.drive_block1;
          if (block1.size() < 4 * k) block1.resize(4 * k);
          philox4x32_10_lanes(many_lo, many_hi, k, Purpose::external, di, window, 1, key, block1.data(), k);
          for (size_t x = 0; x < k; ++x) {
            const uint32_t i = many[x];
            for (uint32_t j = 3; j < count[i]; ++j) {
              ev_neuron[n_events] = i;
              if (j < 7) {
                ev_word[n_events] = block1[(j - 3) * k + x];
              } else {
                const Counter b = philox4x32_10(make_counter(gid[i], Purpose::external, di, window, 1 + (j - 3) / 4), key);
                ev_word[n_events] = b[(j - 3) % 4];
              }
              ++n_events;
            }
          }
        }
        events += n_events;
        // Efficacies and places vectorised, the few normal tails fixed, then added.
        auto& ev_weight = ts.extra_weight;
        auto& ev_at = ts.extra_at;
        auto& ev_tail = ts.extra_tail;
        auto& tails = ts.extra_tails;
        if (ev_weight.size() < n_events + 1) {
          ev_weight.resize(ev_neuron.size() + 1); ev_at.resize(ev_weight.size());
          ev_tail.resize(ev_weight.size()); tails.resize(ev_weight.size() + 8);
        }
        if (sd == 0) {  // one efficacy for every event (mean + 0 z): only their places
          const int32_t weight = to_fixed(mean, 0.0, 0.0, scale);
          event_places(ev_word.data(), ev_neuron.data(), n_events, L, stride, ev_at.data());
#pragma GCC unroll 4
          for (size_t e = 0; e < n_events; ++e) in[ev_at[e]] += weight;
          continue;
        }
        const size_t n_tails = event_terms(ev_word.data(), ev_neuron.data(), n_events, L, stride, float(mean),
                                           float(sd), float(scale), ev_weight.data(), ev_at.data(), ev_tail.data(),
                                           tails.data());
        for (size_t t = 0; t < n_tails; ++t) {
          const uint32_t e = tails[t];
          ev_weight[e] = tail_efficacy(ev_word[e], L, mean, sd, scale);
        }
#pragma GCC unroll 4
        for (size_t e = 0; e < n_events; ++e) in[ev_at[e]] += ev_weight[e];
      }
    }
  }
  ts.counters.synaptic_events_external += events;
}

#if defined(RANVIER_HAVE_AVX512_KERNELS)
namespace {
RANVIER_AVX512 uint64_t fixed_drive_avx512(const uint32_t* __restrict w, uint64_t m, const uint32_t* T, int32_t weight,
                                           int32_t* __restrict in, uint32_t* __restrict capped, uint64_t& n_capped);
}  // namespace
#endif

// The drive of one-step windows with a fixed efficacy (the microcircuit's): only a count per
// neuron and step, k events adding k * weight. One Philox block per neuron serves four steps
// (word window % 4 of the block keyed by window / 4), drawn for all neurons at once (AVX2).
uint64_t Engine::fixed_weight_drive(ThreadState& ts, const PopulationRange& range, uint32_t di,
                                    const PoissonTable& table, int32_t weight, uint32_t window) {
  const uint64_t m = range.end - range.begin;
  auto& words = ts.fixed_drive_words[di];
  if (words.size() != 4 * m || (window & 3) == 0 || ts.fixed_drive_group[di] != (window >> 2)) {
    words.resize(4 * m);
    philox4x32_10_lanes(ts.neurons.gid_lo.data() + range.begin, ts.neurons.gid_hi.data() + range.begin, m,
                        Purpose::external, di, window >> 2, 0x80000000u, key_from_seed(cfg_.seed), words.data(), m);
    ts.fixed_drive_group[di] = window >> 2;
  }
  const uint32_t* w = words.data() + (window & 3) * m;
  int32_t* in = ts.input.data() + range.begin;  // the single row of a one-step window
#if defined(RANVIER_HAVE_AVX512_KERNELS)
  if (avx512_kernels()) {
    constexpr uint64_t kChunk = 4096;  // the capped list has room for a chunk and a vector more
    if (ts.drive_count.size() < kChunk + 16) ts.drive_count.resize(kChunk + 16);
    uint64_t events = 0;
    for (uint64_t begin = 0; begin < m; begin += kChunk) {
      const uint64_t n = std::min(kChunk, m - begin);
      uint64_t n_capped = 0;
      events += fixed_drive_avx512(w + begin, n, table.thresholds(), weight, in + begin, ts.drive_count.data(), n_capped);
      for (uint64_t c = 0; c < n_capped; ++c) {  // rare: counts of kCounts and more, drawn exactly
        const uint32_t i = ts.drive_count[c];
        const uint32_t exact = table.sample(to_uniform(w[begin + i]));
        in[begin + i] += int32_t(exact - kCounts) * weight;
        events += exact - kCounts;
      }
    }
    return events;
  }
#endif
#if defined(__AVX2__)
  // One pass: each word's count times the weight straight into the input (no count array), the
  // rare capped counts drawn exactly and corrected in place.
  const ThresholdsAvx2 thr(table.thresholds());
  const __m256i wt = _mm256_set1_epi32(weight);
  __m256i sum = _mm256_setzero_si256();  // a lane adds at most kCounts per vector: no overflow
  uint64_t events = 0, i = 0;
  for (; i + 8 <= m; i += 8) {
    __m256i capped;
    const __m256i c = counts8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i)), thr, capped);
    __m256i* at = reinterpret_cast<__m256i*>(in + i);
    _mm256_storeu_si256(at, _mm256_add_epi32(_mm256_loadu_si256(at), _mm256_mullo_epi32(c, wt)));
    sum = _mm256_add_epi32(sum, c);
    if (!_mm256_testz_si256(capped, capped)) [[unlikely]] {
      const uint32_t lanes = uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(capped)));
      for (uint32_t l = 0; l < 8; ++l) {
        if (!(lanes >> l & 1)) continue;
        const uint32_t exact = table.sample(to_uniform(w[i + l]));
        in[i + l] += int32_t(exact - kCounts) * weight;
        events += exact - kCounts;
      }
    }
  }
  alignas(32) uint32_t lane_sums[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lane_sums), sum);
  for (uint32_t l = 0; l < 8; ++l) events += lane_sums[l];
  uint32_t tail[8];  // the last m % 8 neurons: their counts in one call
  poisson_counts(w + i, m - i, table.thresholds(), tail);
  for (uint64_t l = 0; i + l < m; ++l) {
    const uint32_t c = tail[l] == kCounts ? table.sample(to_uniform(w[i + l])) : tail[l];
    in[i + l] += int32_t(c) * weight;
    events += c;
  }
  return events;
#else
  constexpr uint64_t kChunk = 512;
  if (ts.drive_count.size() < kChunk) ts.drive_count.resize(kChunk);
  uint32_t* count = ts.drive_count.data();
  uint64_t events = 0;
  for (uint64_t begin = 0; begin < m; begin += kChunk) {
    const uint64_t n = std::min(kChunk, m - begin);
    if (poisson_counts(w + begin, n, table.thresholds(), count))
      for (uint64_t i = 0; i < n; ++i)
        if (count[i] == kCounts) count[i] = table.sample(to_uniform(w[begin + i]));
    uint32_t sum = 0;
#pragma omp simd reduction(+ : sum)
    for (uint64_t i = 0; i < n; ++i) {
      in[begin + i] += int32_t(count[i]) * weight;
      sum += count[i];
    }
    events += sum;
  }
  return events;
#endif
}

#if defined(RANVIER_HAVE_AVX512_KERNELS)
namespace {
// The fixed-weight drive of m neurons in one pass: each word's count (by a branch-free binary
// search of the thresholds, held in one register) times the weight added into the input; the
// same counts as poisson_counts. Counts that reach the cap are listed in `capped` for the caller
// to draw exactly. Returns the events counted here (capped ones at kCounts).
RANVIER_AVX512 uint64_t fixed_drive_avx512(const uint32_t* __restrict w, uint64_t m, const uint32_t* T, int32_t weight,
                                           int32_t* __restrict in, uint32_t* __restrict capped, uint64_t& n_capped) {
  alignas(64) uint32_t padded[16];
  for (uint32_t j = 0; j < 16; ++j) padded[j] = j < kCounts ? T[j] : 0xFFFFFFFFu;  // never reached: words are capped below
  const __m512i table = _mm512_load_si512(padded), cap = _mm512_set1_epi32(int(0xFFFFFFFEu));
  const __m512i wt = _mm512_set1_epi32(weight), full = _mm512_set1_epi32(int(kCounts));
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512i sum = _mm512_setzero_si512();
  uint64_t i = 0;
  for (; i + 16 <= m; i += 16) {
    const __m512i word = _mm512_min_epu32(_mm512_loadu_si512(w + i), cap);
    __m512i c = _mm512_setzero_si512();
    for (int step = 8; step >= 1; step >>= 1) {  // thresholds are non-decreasing
      const __m512i probe = _mm512_permutexvar_epi32(_mm512_add_epi32(c, _mm512_set1_epi32(step - 1)), table);
      c = _mm512_mask_add_epi32(c, _mm512_cmpge_epu32_mask(word, probe), c, _mm512_set1_epi32(step));
    }
    _mm512_storeu_si512(in + i, _mm512_add_epi32(_mm512_loadu_si512(in + i), _mm512_mullo_epi32(c, wt)));
    sum = _mm512_add_epi32(sum, c);
    const __mmask16 at_cap = _mm512_cmpeq_epi32_mask(c, full);
    if (at_cap) {
      _mm512_storeu_si512(capped + n_capped, _mm512_maskz_compress_epi32(at_cap, _mm512_add_epi32(_mm512_set1_epi32(int(i)), lane)));
      n_capped += uint64_t(__builtin_popcount(at_cap));
    }
  }
  uint64_t events = uint64_t(_mm512_reduce_add_epi32(sum));  // a lane adds at most 10 per vector: no overflow
  for (; i < m; ++i) {
    const uint32_t word = std::min(w[i], 0xFFFFFFFEu);
    uint32_t c = 0;
    for (uint32_t j = 0; j < kCounts; ++j) c += word >= T[j];
    in[i] += int32_t(c) * weight;
    events += c;
    if (c == kCounts) capped[n_capped++] = uint32_t(i);
  }
  return events;
}
}  // namespace
#endif

}  // namespace ranvier
