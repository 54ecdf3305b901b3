// The only file that includes mpi.h.
#include <mpi.h>

#include <climits>
#include <stdexcept>

#include "comm/communicator.hpp"

namespace ranvier {
namespace {

void check(int err, const char* what) {
  if (err != MPI_SUCCESS) throw std::runtime_error(std::string("MPI error in ") + what);
}

std::vector<int> to_int(const std::vector<size_t>& v) {
  std::vector<int> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] > size_t(INT_MAX)) throw std::runtime_error("MPI message above 2^31 words");
    out[i] = int(v[i]);
  }
  return out;
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm parent) {
    int provided = 0;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_FUNNELED)
      throw std::runtime_error("MPI must be initialised with at least MPI_THREAD_FUNNELED");
    check(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string library() const override { return mpi_library_name(); }
  void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }
  void allgather_word(uint64_t send, uint64_t* recv) override {
    check(MPI_Allgather(&send, 1, MPI_UINT64_T, recv, 1, MPI_UINT64_T, comm_), "MPI_Allgather");
  }
  void allgatherv(const uint64_t* send, size_t count, uint64_t* recv, const std::vector<size_t>& counts,
                  const std::vector<size_t>& displs) override {
    const auto c = to_int(counts), d = to_int(displs);
    check(MPI_Allgatherv(send, int(count), MPI_UINT64_T, recv, c.data(), d.data(), MPI_UINT64_T, comm_),
          "MPI_Allgatherv");
  }
  void alltoall_word(const uint64_t* send, uint64_t* recv) override {
    check(MPI_Alltoall(send, 1, MPI_UINT64_T, recv, 1, MPI_UINT64_T, comm_), "MPI_Alltoall");
  }
  void alltoallv(const uint64_t* send, const std::vector<size_t>& send_counts, const std::vector<size_t>& send_displs,
                 uint64_t* recv, const std::vector<size_t>& recv_counts,
                 const std::vector<size_t>& recv_displs) override {
    const auto sc = to_int(send_counts), sd = to_int(send_displs), rc = to_int(recv_counts), rd = to_int(recv_displs);
    check(MPI_Alltoallv(send, sc.data(), sd.data(), MPI_UINT64_T, recv, rc.data(), rd.data(), MPI_UINT64_T, comm_),
          "MPI_Alltoallv");
  }
  void allreduce_sum(uint64_t* data, size_t count) override {
    check(MPI_Allreduce(MPI_IN_PLACE, data, int(count), MPI_UINT64_T, MPI_SUM, comm_), "MPI_Allreduce");
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_communicator(bool use_mpi, int64_t fortran_handle) {
  if (!use_mpi) return make_local_communicator();
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw std::runtime_error("MPI is not initialised (import mpi4py.MPI first)");
  return std::make_unique<MpiCommunicator>(MPI_Comm_f2c(MPI_Fint(fortran_handle)));
}

bool have_mpi() { return true; }

std::string mpi_library_name() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string s(version, len);
  return s.substr(0, s.find('\n'));
}

}  // namespace ranvier
