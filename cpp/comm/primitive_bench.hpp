// A micro-benchmark of the communication primitives the exchange strategies use, timed through
// the same Communicator they use, against message size.
#pragma once
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace ranvier {

std::vector<std::string> primitive_names();
// Seconds of each of `repeats` calls on this rank (after a few warm-up calls), every call
// started together after a barrier. words: 64-bit words per rank (gather, reduce) or per rank
// pair (all-to-all, puts, sends); every other rank is a neighbour for the neighbourhood one.
// The *_init primitives are the persistent forms (of an all-gather, the all-to-all-v and the
// sends and receives): initialised once before the timing, then each call starts and completes them.
std::vector<double> time_primitive(Communicator& comm, const std::string& name, size_t words, int repeats);

}  // namespace ranvier
