// Machine figures for the roofline of bench/roofline.py (stream bandwidth, random-access
// latency and throughput, delivery's scatter-add, clock and IPC); see calibration.cpp.
#pragma once
#include <cstddef>
#include <map>
#include <string>

namespace ranvier {

// Every figure, by name; `memory_bytes` sizes the arrays that must lie past every cache.
std::map<std::string, double> calibrate(std::size_t memory_bytes, int repeats);

}  // namespace ranvier
