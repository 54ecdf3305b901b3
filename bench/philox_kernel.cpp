// Nanoseconds per Philox4x32-10 block of the vector kernels (philox4x32_10_series, as the build
// draws synapse streams, and philox4x32_10_lanes, as the drive draws per-neuron blocks), for a
// given number of blocks per call; best of 5. A checksum of the outputs follows, to compare two
// versions of the header for identical blocks.
//
//   g++ -O3 -std=gnu++20 -march=native -mno-avx512f -Icpp bench/philox_kernel.cpp -o /tmp/philox_kernel
//   /tmp/philox_kernel 48 200000        # blocks per call, calls
//
// To compare with an older header, build a second binary with -I pointing at a folder holding
// that version's base/philox.hpp and base/simd.hpp (docs/performance.md, "Philox's latency").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/philox.hpp"

using namespace ranvier;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s BLOCKS_PER_CALL CALLS\n", argv[0]);
    return 2;
  }
  const size_t n = std::strtoul(argv[1], nullptr, 10);
  const int calls = std::atoi(argv[2]);
  std::vector<uint32_t> out(4 * n + 1), lo(n), hi(n, 0);
  for (size_t i = 0; i < n; ++i) lo[i] = uint32_t(i * 2654435761u);
  const Key key = {123u, 456u};
  uint64_t sink = 0;
  double series = 1e9, lanes = 1e9;
  for (int trial = 0; trial < 5; ++trial) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < calls; ++r) {
      philox4x32_10_series(make_counter(uint64_t(r), Purpose::synapse, 3, 0, 0), 2, n, key, out.data(), n);
      sink += out[size_t(r) % (4 * n + 1)];
    }
    const auto t1 = std::chrono::steady_clock::now();
    for (int r = 0; r < calls; ++r) {
      philox4x32_10_lanes(lo.data(), hi.data(), n, Purpose::external, 1, uint32_t(r), 0x80000000u, key, out.data(), n);
      sink += out[size_t(r) % (4 * n + 1)];
    }
    const auto t2 = std::chrono::steady_clock::now();
    series = std::min(series, std::chrono::duration<double>(t1 - t0).count());
    lanes = std::min(lanes, std::chrono::duration<double>(t2 - t1).count());
  }
  const double blocks = double(n) * calls;
  std::printf("%zu blocks a call: series %.3f ns a block, lanes %.3f ns a block (%llu)\n", n, series / blocks * 1e9,
              lanes / blocks * 1e9, static_cast<unsigned long long>(sink % 1000));
  uint64_t h = 0;
  for (int r = 0; r < 50; ++r) {
    philox4x32_10_series(make_counter(uint64_t(r), Purpose::synapse, 3, 0, 0), 2, n, key, out.data(), n);
    for (size_t i = 0; i < 4 * n; ++i) h = h * 1000003u ^ out[i];
    philox4x32_10_lanes(lo.data(), hi.data(), n, Purpose::external, 1, uint32_t(r), 0x80000000u, key, out.data(), n);
    for (size_t i = 0; i < 4 * n; ++i) h = h * 1000003u ^ out[i];
  }
  std::printf("checksum %016llx\n", static_cast<unsigned long long>(h));
  return 0;
}
