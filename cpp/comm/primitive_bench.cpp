#include "comm/primitive_bench.hpp"

#include <omp.h>

#include <functional>
#include <stdexcept>

namespace ranvier {

std::vector<std::string> primitive_names() {
  return {"allgather", "alltoall", "alltoallv", "neighbor_alltoallv", "put_fence", "ibarrier", "allreduce",
          "isend_irecv", "allgather_init", "alltoallv_init", "send_recv_init"};
}

std::vector<double> time_primitive(Communicator& comm, const std::string& name, size_t words, int repeats) {
  if (repeats < 1) throw std::invalid_argument("repeats must be at least 1");
  const int P = comm.size(), me = comm.rank();
  std::vector<uint64_t> send(words * P, uint64_t(me)), recv(words * P, 0);
  std::vector<size_t> counts(P, words), displs(P);
  for (int r = 0; r < P; ++r) displs[r] = size_t(r) * words;
  std::vector<int> others;
  for (int r = 0; r < P; ++r)
    if (r != me) others.push_back(r);
  std::vector<size_t> ncounts(others.size(), words), ndispls(others.size());
  for (size_t k = 0; k < others.size(); ++k) ndispls[k] = k * words;

  std::unique_ptr<Communicator> graph;
  std::unique_ptr<Window> window;
  std::function<void()> op;
  std::vector<Persistent> persistent;
  if (name == "allgather") {
    op = [&] { comm.allgatherv(send.data(), words, recv.data(), counts, displs); };
  } else if (name == "alltoall") {
    op = [&] { comm.wait(comm.ialltoall(send.data(), words, recv.data())); };
  } else if (name == "alltoallv") {
    op = [&] { comm.alltoallv(send.data(), counts, displs, recv.data(), counts, displs); };
  } else if (name == "neighbor_alltoallv") {
    graph = comm.graph(others, others);
    op = [&] { graph->wait(graph->ineighbor_alltoallv(send.data(), ncounts, ndispls, recv.data(), ncounts, ndispls)); };
  } else if (name == "put_fence") {
    window = comm.window(words * P);
    op = [&] {
      for (int r : others) window->put(send.data() + size_t(r) * words, words, r, size_t(me) * words);
      window->fence();
    };
  } else if (name == "ibarrier") {
    op = [&] { comm.wait(comm.ibarrier()); };
  } else if (name == "allreduce") {
    op = [&] { comm.allreduce_sum(send.data(), words); };
  } else if (name == "isend_irecv") {
    op = [&] {
      std::vector<Request> requests;
      for (int r : others) requests.push_back(comm.irecv(recv.data() + size_t(r) * words, words, r, 7400));
      for (int r : others) requests.push_back(comm.isend(send.data() + size_t(r) * words, words, r, 7400, false));
      comm.wait_all(requests);
    };
  } else if (name == "allgather_init") {        // the persistent forms: initialised once, not timed
    persistent.push_back(comm.allgather_init(send.data(), words, recv.data()));
  } else if (name == "alltoallv_init") {
    persistent.push_back(comm.alltoallv_init(send.data(), counts, displs, recv.data(), counts, displs));
  } else if (name == "send_recv_init") {
    for (int r : others) persistent.push_back(comm.recv_init(recv.data() + size_t(r) * words, words, r, 7401));
    for (int r : others) persistent.push_back(comm.send_init(send.data() + size_t(r) * words, words, r, 7401));
  } else {
    throw std::invalid_argument("unknown primitive '" + name + "'");
  }
  if (name.ends_with("_init"))
    op = [&] {
      comm.start_persistent(persistent);
      comm.wait_persistent(persistent);
    };
  constexpr int kWarmUp = 5;
  std::vector<double> seconds;
  seconds.reserve(repeats);
  for (int i = 0; i < kWarmUp + repeats; ++i) {
    comm.barrier();
    const double t0 = omp_get_wtime();
    op();
    const double t1 = omp_get_wtime();
    if (i >= kWarmUp) seconds.push_back(t1 - t0);
  }
  for (Persistent p : persistent) comm.free_persistent(p);
  return seconds;
}

}  // namespace ranvier
