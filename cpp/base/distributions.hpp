// Distributions drawn from uniforms, written for speed and exact reproducibility.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ranvier {

// Inverse of the standard normal CDF: P. J. Acklam's rational approximation (relative error
// below 1.2e-9), one uniform per normal deviate. The central region (95 % of draws) is a
// branch-free rational function that vectorises; the tails need a logarithm.
inline constexpr double kNormalLow = 0.02425;

// In the precision of T: double for the build's draws and everywhere else, float for the drive's
// events (cpp/core/drive.cpp: twice the lanes a register). Always inlined: the vector loops that
// call it stay vector loops only if it is (a larger caller once made gcc call it out of line, and
// the build's draws ran 60 % longer).
template <class T>
[[gnu::always_inline]] inline T inverse_normal_central_in(T p) {
  constexpr T a[] = {T(-3.969683028665376e+01), T(2.209460984245205e+02), T(-2.759285104469687e+02),
                     T(1.383577518672690e+02), T(-3.066479806614716e+01), T(2.506628277459239e+00)};
  constexpr T b[] = {T(-5.447609879822406e+01), T(1.615858368580409e+02), T(-1.556989798598866e+02),
                     T(6.680131188771972e+01), T(-1.328068155288572e+01)};
  const T q = p - T(0.5), r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + T(1));
}

[[gnu::always_inline]] inline double inverse_normal_central(double p) { return inverse_normal_central_in(p); }

// The tails (p < kNormalLow or p > 1 - kNormalLow). The upper tail's sign is flipped by a mask,
// not a branch: tails come in random order, and a branch that mispredicts half the time also
// keeps the next tail's long chain (a logarithm, a root, a division) from overlapping this one.
inline double inverse_normal_tail(double p) {
  constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                          -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                          3.754408661907416e+00};
  const bool lower = p < kNormalLow;
  const double q = std::sqrt(-2.0 * std::log(lower ? p : 1.0 - p));
  const double x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
                   ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  return std::bit_cast<double>(std::bit_cast<uint64_t>(x) ^ (uint64_t(!lower) << 63));  // -x exactly
}

inline double inverse_normal(double p) {
  if (p >= kNormalLow && p <= 1.0 - kNormalLow) return inverse_normal_central(p);
  return inverse_normal_tail(p);
}

// Binomial(n, p) by inversion of one uniform u: the probabilities are summed upward from
// max(0, mean - 10 sd) (the mass below is under 1e-23), so a draw costs O(sd) terms. Exact up
// to rounding, and the same uniform always gives the same count.
inline uint64_t binomial_inverse(uint64_t n, double p, double u) {
  if (n == 0 || p <= 0) return 0;
  if (p >= 1) return n;
  if (p > 0.5) return n - binomial_inverse(n, 1.0 - p, 1.0 - u);
  const double mean = double(n) * p, sd = std::sqrt(mean * (1.0 - p));
  const uint64_t lo = mean < 30 ? 0 : uint64_t(std::max(0.0, std::floor(mean - 10.0 * sd)));
  const uint64_t hi = std::min<uint64_t>(n, uint64_t(std::ceil(mean + 10.0 * sd + 30.0)));
  double pk = std::exp(std::lgamma(double(n) + 1) - std::lgamma(double(lo) + 1) - std::lgamma(double(n - lo) + 1) +
                       double(lo) * std::log(p) + double(n - lo) * std::log1p(-p));
  const double odds = p / (1.0 - p);
  double acc = pk;
  uint64_t k = lo;
  while (acc < u && k < hi) {
    pk *= double(n - k) / double(k + 1) * odds;
    ++k;
    acc += pk;
  }
  return k;
}

// Poisson counts by inversion of a tabulated CDF (one uniform per draw). A guide table gives,
// for each of 256 equal slices of (0, 1), the smallest count whose CDF reaches the slice, so a
// draw is a lookup and a short forward scan instead of a mispredicted binary search.
class PoissonTable {
 public:
  PoissonTable() : PoissonTable(0.0) {}
  explicit PoissonTable(double mean) {
    if (mean > 0) {
      cdf_.clear();
      const double top = mean + 12.0 * std::sqrt(mean) + 20.0;  // the tail beyond is below 1e-30
      double acc = 0.0;
      for (int k = 0; k <= int(top); ++k) {
        acc += std::exp(k * std::log(mean) - mean - std::lgamma(k + 1.0));
        cdf_.push_back(acc);
      }
      cdf_.back() = 1.0;
    }
    guide_.resize(kGuide);
    uint32_t k = 0;
    for (int i = 0; i < kGuide; ++i) {
      while (cdf_[k] <= double(i) / kGuide) ++k;
      guide_[i] = k;
    }
    // word >= T[j] exactly when to_uniform(word) = (word + 1/2) 2^-32 >= cdf[j], so
    // T[j] = ceil(cdf[j] 2^32 - 1/2), capped at 2^32 - 1 (see thresholds()).
    for (uint32_t j = 0; j < kCounted; ++j) {
      const double c = j < cdf_.size() ? cdf_[j] : 1.0;
      thresholds_[j] = uint32_t(std::clamp(std::ceil(c * 0x1p32 - 0.5), 0.0, 4294967295.0));
    }
  }

  // Counts below kCounted by integer compares, branch-free for many draws at once: the count of
  // a 32-bit word (capped at 2^32 - 2, so that no word reaches a threshold capped at 2^32 - 1;
  // the one word 2^32 - 1 then counts as 2^32 - 2, a change of probability 2^-32) is the number
  // of thresholds()[j] it reaches. Counts of kCounted and more (rare) come from sample().
  static constexpr uint32_t kCounted = 10;
  const uint32_t* thresholds() const { return thresholds_; }

  uint32_t sample(double u) const {
    uint32_t k = guide_[int(u * kGuide)];
    while (cdf_[k] <= u) ++k;
    return k;
  }

 private:
  static constexpr int kGuide = 256;
  std::vector<double> cdf_{1.0};
  std::vector<uint32_t> guide_ = std::vector<uint32_t>(kGuide, 0);
  uint32_t thresholds_[kCounted] = {};
};

// The drive's Poisson counts (cpp/core/drive.cpp: the AVX-512, AVX2 and scalar paths the CPU
// runs) of m words against a table's thresholds(), capped at PoissonTable::kCounted; returns
// whether a count reached the cap. For tests against a plain reference.
bool poisson_counts_of(const uint32_t* words, uint64_t m, const uint32_t* thresholds, uint32_t* count);

}  // namespace ranvier
