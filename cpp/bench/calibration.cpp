// Machine calibration for the roofline (bench/roofline.py): the figures a phase's floor is made
// of, each measured by a small kernel on one thread, the best of a few repeats. Nothing here is
// used by a simulation.
#include "bench/calibration.hpp"

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "base/huge_pages.hpp"

namespace ranvier {
namespace {

template <class Vec>
void touch(Vec& v) {
  std::fill(v.begin(), v.end(), typename Vec::value_type(1));
}

// A cheap deterministic generator for indices and permutations (splitmix64).
inline uint64_t mix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// This thread's CPU seconds: on a shared machine, the time other processes hold the core is
// not counted (wall time halved every figure when a second process shared the core).
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

template <class F>
double best_seconds(int repeats, F&& run) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = cpu_seconds();
    run();
    best = std::min(best, cpu_seconds() - t0);
  }
  return best;
}

// Bytes per second read by a summing loop over `bytes` (past every cache).
double stream_read(size_t bytes, int repeats) {
  std::vector<uint64_t, HugePageAllocator<uint64_t>> a(bytes / 8);
  touch(a);
  volatile uint64_t sink = 0;
  const double t = best_seconds(repeats, [&] {
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 4 <= a.size(); i += 4) { s0 += a[i]; s1 += a[i + 1]; s2 += a[i + 2]; s3 += a[i + 3]; }
    sink = sink + s0 + s1 + s2 + s3;
  });
  return double(a.size() * 8) / t;
}

// Bytes per second of a copy (read + write counted) over `bytes`.
double stream_copy(size_t bytes, int repeats) {
  std::vector<uint64_t, HugePageAllocator<uint64_t>> a(bytes / 16), b(bytes / 16);
  touch(a);
  touch(b);
  const double t = best_seconds(repeats, [&] {
    std::copy(a.begin(), a.end(), b.begin());
    asm volatile("" ::: "memory");
  });
  return double(a.size() * 16) / t;
}

// Bytes per second of a triad a = b + 3 c over `bytes` (two streams read, one written: 24 bytes
// per element as STREAM counts them; the write's read-for-ownership is not counted).
double stream_triad(size_t bytes, int repeats) {
  std::vector<uint64_t, HugePageAllocator<uint64_t>> a(bytes / 24), b(bytes / 24), c(bytes / 24);
  touch(a);
  touch(b);
  touch(c);
  const double t = best_seconds(repeats, [&] {
    for (size_t i = 0; i < a.size(); ++i) a[i] = b[i] + 3 * c[i];
    asm volatile("" ::: "memory");
  });
  return double(a.size() * 24) / t;
}

// Nanoseconds per hop of a pointer chase over a random cycle of cache lines in `bytes`: the
// latency of one random access with nothing to overlap it.
double chase(size_t bytes, bool huge, int repeats) {
  const size_t n = bytes / 64;
  std::vector<uint64_t, HugePageAllocator<uint64_t>> huge_lines;
  std::vector<uint64_t> small_lines;
  uint64_t* next;
  if (huge) { huge_lines.resize(n * 8); next = huge_lines.data(); }
  else { small_lines.resize(n * 8); next = small_lines.data(); }
  // Sattolo's shuffle: one cycle through every line.
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  uint64_t seed = 42;
  for (size_t i = n - 1; i > 0; --i) std::swap(order[i], order[mix(seed) % i]);
  for (size_t i = 0; i < n; ++i) next[size_t(order[i]) * 8] = uint64_t(order[(i + 1) % n]) * 8;
  const size_t hops = std::min<size_t>(n, 4000000);
  volatile uint64_t sink = 0;
  const double t = best_seconds(repeats, [&] {
    uint64_t p = 0;
    for (size_t h = 0; h < hops; ++h) p = next[p];
    sink = p;
  });
  return t / double(hops) * 1e9;
}

// Nanoseconds per independent random 4-byte load over `bytes` (huge pages): what many accesses
// in flight at once cost, the memory-level parallelism the core finds by itself.
double random_loads(size_t bytes, int repeats) {
  std::vector<uint32_t, HugePageAllocator<uint32_t>> a(bytes / 4);
  touch(a);
  const size_t n = 8000000, mask = a.size() - 1;  // a.size() is a power of two
  volatile uint64_t sink = 0;
  const double t = best_seconds(repeats, [&] {
    uint64_t s = 7, sum = 0;
    for (size_t i = 0; i < n; ++i) sum += a[mix(s) & mask];
    sink = sum;
  });
  return t / double(n) * 1e9;
}

// Nanoseconds per event of delivery's inner loop: packed words (weight << bits | target)
// streamed from memory, each added into a row of `row` int32 entries.
double scatter_add(size_t row, size_t events, int repeats) {
  int bits = 1;
  while ((size_t(1) << bits) < row) ++bits;
  std::vector<uint32_t, HugePageAllocator<uint32_t>> words(events);
  uint64_t s = 11;
  for (auto& w : words) w = (uint32_t(mix(s) & 0xFF) << bits) | uint32_t(mix(s) % row);
  std::vector<int32_t> in(row, 0);
  const uint32_t mask = (uint32_t(1) << bits) - 1;
  const double t = best_seconds(repeats, [&] {
    int32_t* r = in.data();
    for (uint32_t w : words) r[w & mask] += int32_t(w) >> bits;
    asm volatile("" ::: "memory");
  });
  return t / double(events) * 1e9;
}

// The core clock (GHz) from a dependent chain of adds (one cycle each), and the scalar
// instructions per cycle of four independent chains.
void clock_and_ipc(int repeats, double& ghz, double& ipc) {
  const uint64_t n = 200000000;
  uint64_t x = 1;
  const double chain = best_seconds(repeats, [&] {
    uint64_t v = x;
    for (uint64_t i = 0; i < n; ++i) asm volatile("add $1, %0" : "+r"(v));
    x = v;
  });
  ghz = double(n) / chain * 1e-9;
  uint64_t a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8;
  const double wide = best_seconds(repeats, [&] {
    for (uint64_t i = 0; i < n / 8; ++i)
      asm volatile("add $1, %0\n\tadd $1, %1\n\tadd $1, %2\n\tadd $1, %3\n\t"
                   "add $1, %4\n\tadd $1, %5\n\tadd $1, %6\n\tadd $1, %7"
                   : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f), "+r"(g), "+r"(h));
  });
  // Eight independent adds plus the loop's increment, compare and branch per iteration.
  ipc = double(n / 8) * 11.0 / (wide * ghz * 1e9);
}

}  // namespace

std::map<std::string, double> calibrate(size_t memory_bytes, int repeats) {
  std::map<std::string, double> out;
  out["stream_read_GBps"] = stream_read(memory_bytes, repeats) * 1e-9;
  out["stream_copy_GBps"] = stream_copy(memory_bytes, repeats) * 1e-9;
  out["stream_triad_GBps"] = stream_triad(memory_bytes, repeats) * 1e-9;
  out["chase_ns"] = chase(memory_bytes / 2, false, repeats);
  out["chase_huge_ns"] = chase(memory_bytes / 2, true, repeats);
  size_t pow2 = 1;
  while (pow2 * 2 <= memory_bytes / 2) pow2 *= 2;
  out["random_load_ns"] = random_loads(pow2, repeats);
  for (size_t row : {size_t(16) << 10, size_t(64) << 10, size_t(256) << 10, size_t(4) << 20})
    out["scatter_add_ns_row_" + std::to_string(row >> 10) + "Ki"] = scatter_add(row, 32u << 20, repeats);
  double ghz = 0, ipc = 0;
  clock_and_ipc(repeats, ghz, ipc);
  out["clock_GHz"] = ghz;
  out["scalar_ipc"] = ipc;
  return out;
}

}  // namespace ranvier
