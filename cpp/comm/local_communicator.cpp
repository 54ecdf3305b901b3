#include <algorithm>
#include <stdexcept>

#include "comm/communicator.hpp"

namespace ranvier {
namespace {

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string library() const override { return "none (single process)"; }
  void barrier() override {}
  void allgather_word(uint64_t send, uint64_t* recv) override { recv[0] = send; }
  void allgatherv(const uint64_t* send, size_t count, uint64_t* recv, const std::vector<size_t>&,
                  const std::vector<size_t>& displs) override {
    std::copy(send, send + count, recv + displs[0]);
  }
  void alltoall_word(const uint64_t* send, uint64_t* recv) override { recv[0] = send[0]; }
  void alltoallv(const uint64_t* send, const std::vector<size_t>& send_counts, const std::vector<size_t>& send_displs,
                 uint64_t* recv, const std::vector<size_t>&, const std::vector<size_t>& recv_displs) override {
    std::copy(send + send_displs[0], send + send_displs[0] + send_counts[0], recv + recv_displs[0]);
  }
  void allreduce_sum(uint64_t*, size_t) override {}
};

}  // namespace

std::unique_ptr<Communicator> make_local_communicator() { return std::make_unique<LocalCommunicator>(); }

#ifndef RANVIER_HAVE_MPI
std::unique_ptr<Communicator> make_communicator(bool use_mpi, int64_t) {
  if (use_mpi)
    throw std::runtime_error("this ranvier was built without MPI; install an MPI (pip install mpich mpi4py) "
                             "and reinstall ranvier to run on several ranks");
  return make_local_communicator();
}
bool have_mpi() { return false; }
std::string mpi_library_name() { return "none"; }
#endif

}  // namespace ranvier
