// The thin, generic wrapper below the exchange strategies. No MPI type appears here:
// a single-process run uses LocalCommunicator and needs no MPI at all.
// Buffers are arrays of 64-bit words; counts and displacements are in words.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ranvier {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string library() const = 0;
  virtual void barrier() = 0;
  // Every rank contributes one word; recv gets size() words.
  virtual void allgather_word(uint64_t send, uint64_t* recv) = 0;
  virtual void allgatherv(const uint64_t* send, size_t count, uint64_t* recv, const std::vector<size_t>& counts,
                          const std::vector<size_t>& displs) = 0;
  // One word to each rank.
  virtual void alltoall_word(const uint64_t* send, uint64_t* recv) = 0;
  virtual void alltoallv(const uint64_t* send, const std::vector<size_t>& send_counts,
                         const std::vector<size_t>& send_displs, uint64_t* recv,
                         const std::vector<size_t>& recv_counts, const std::vector<size_t>& recv_displs) = 0;
  virtual void allreduce_sum(uint64_t* data, size_t count) = 0;
};

std::unique_ptr<Communicator> make_local_communicator();
// use_mpi false: a single process. Otherwise the MPI communicator with this Fortran handle (from
// mpi4py's py2f(); MPICH's handles of derived communicators are negative as integers), which the
// engine duplicates so its traffic never mixes with the caller's.
std::unique_ptr<Communicator> make_communicator(bool use_mpi, int64_t fortran_handle);
bool have_mpi();
std::string mpi_library_name();

}  // namespace ranvier
