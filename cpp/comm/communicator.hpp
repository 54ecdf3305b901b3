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

// A pending non-blocking operation: an index into its communicator's table. Released by test()
// when it reports completion, or by wait(). Buffers it uses must stay valid until then.
using Request = int;

// A persistent operation (MPI-4): its buffers, counts and partners are bound once by an *_init
// call, then it is started and completed any number of times, and freed when no longer needed
// (while MPI is still running). An index into its communicator's table of persistent operations,
// a table apart from Request's. The buffers must stay valid, and the send buffer unchanged while
// the operation is active, until it is freed.
using Persistent = int;

// A window of 64-bit words exposed for one-sided access by every rank of its communicator.
// fetch_add's result and put's source are valid only once the access epoch is closed (fence or
// complete). The local words may be read and written between epochs only.
class Window {
 public:
  virtual ~Window() = default;
  virtual uint64_t* data() = 0;
  virtual size_t words() const = 0;
  virtual void fence() = 0;
  // Post-start-complete-wait: expose to `origins`, access `targets` (ranks of the communicator).
  virtual void post(const std::vector<int>& origins) = 0;
  virtual void start(const std::vector<int>& targets) = 0;
  virtual void complete() = 0;
  virtual void wait() = 0;
  virtual void fetch_add(int rank, size_t offset, uint64_t value, uint64_t* result) = 0;
  virtual void put(const uint64_t* data, size_t count, int rank, size_t offset) = 0;
};

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
  virtual void allreduce_max(uint64_t* data, size_t count) = 0;
  virtual void bcast(uint64_t* data, size_t count, int root) = 0;

  // Non-blocking forms. Fixed-size collectives: `count` words from (or to) every rank.
  virtual Request iallgather(const uint64_t* send, size_t count, uint64_t* recv) = 0;
  virtual Request ialltoall(const uint64_t* send, size_t count, uint64_t* recv) = 0;
  virtual Request iallgatherv(const uint64_t* send, size_t count, uint64_t* recv, const std::vector<size_t>& counts,
                              const std::vector<size_t>& displs) = 0;
  virtual Request ialltoallv(const uint64_t* send, const std::vector<size_t>& send_counts,
                             const std::vector<size_t>& send_displs, uint64_t* recv,
                             const std::vector<size_t>& recv_counts, const std::vector<size_t>& recv_displs) = 0;
  virtual Request ibarrier() = 0;
  // Point to point. synchronous: completes only once the receiver has started to receive.
  virtual Request isend(const uint64_t* data, size_t count, int dest, int tag, bool synchronous) = 0;
  virtual Request irecv(uint64_t* data, size_t count, int source, int tag) = 0;
  // A message with this tag from any rank, if one has arrived: its source and length in words.
  virtual bool iprobe(int tag, int& source, size_t& count) = 0;
  virtual void recv(uint64_t* data, size_t count, int source, int tag) = 0;
  virtual bool test(Request r) = 0;
  virtual void wait(Request r) = 0;
  void wait_all(std::vector<Request>& requests) {
    for (Request r : requests) wait(r);
    requests.clear();
  }

  // Persistent operations. The collectives' *_init calls are collective (every rank calls them, in
  // the same order); send_init and recv_init are local. `count` words from (or to) every rank as in
  // iallgather; the alltoallv counts and displacements are copied and bound for the operation's life.
  virtual Persistent allgather_init(const uint64_t* send, size_t count, uint64_t* recv) = 0;
  virtual Persistent alltoallv_init(const uint64_t* send, const std::vector<size_t>& send_counts,
                                    const std::vector<size_t>& send_displs, uint64_t* recv,
                                    const std::vector<size_t>& recv_counts,
                                    const std::vector<size_t>& recv_displs) = 0;
  virtual Persistent send_init(const uint64_t* data, size_t count, int dest, int tag) = 0;
  virtual Persistent recv_init(uint64_t* data, size_t count, int source, int tag) = 0;
  // Starts every operation of `ops` (inactive ones) at once; test: whether all have completed
  // (moves them along); wait: until all have. A completed operation is inactive again, not freed.
  virtual void start_persistent(const std::vector<Persistent>& ops) = 0;
  virtual bool test_persistent(const std::vector<Persistent>& ops) = 0;
  virtual void wait_persistent(const std::vector<Persistent>& ops) = 0;
  // Releases an inactive operation. Does nothing once MPI has been finalised.
  virtual void free_persistent(Persistent op) = 0;

  // Topologies. graph(): a communicator whose neighbourhood collectives reach exactly these
  // ranks (ranks of this communicator); the result keeps this rank numbering.
  virtual std::unique_ptr<Communicator> graph(const std::vector<int>& sources, const std::vector<int>& destinations) = 0;
  // On a graph communicator: one word to every destination, one from every source (in order).
  virtual void neighbor_alltoall_word(const uint64_t* send, uint64_t* recv) = 0;
  virtual Request ineighbor_alltoallv(const uint64_t* send, const std::vector<size_t>& send_counts,
                                      const std::vector<size_t>& send_displs, uint64_t* recv,
                                      const std::vector<size_t>& recv_counts,
                                      const std::vector<size_t>& recv_displs) = 0;
  // The ranks of this node: those sharing memory, or consecutive groups of ranks_per_node ranks
  // when the communicator was made with it positive (to emulate several nodes on one).
  virtual std::unique_ptr<Communicator> split_node() = 0;
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  // Collective: every rank exposes `words` words, zeroed.
  virtual std::unique_ptr<Window> window(size_t words) = 0;
};

std::unique_ptr<Communicator> make_local_communicator();
// use_mpi false: a single process. Otherwise the MPI communicator with this Fortran handle (from
// mpi4py's py2f(); MPICH's handles of derived communicators are negative as integers), which the
// engine duplicates so its traffic never mixes with the caller's.
// ranks_per_node: what split_node() calls a node (0: the ranks sharing memory).
std::unique_ptr<Communicator> make_communicator(bool use_mpi, int64_t fortran_handle, int ranks_per_node = 0);
bool have_mpi();
// Whether the MPI library loaded has MPI-4's persistent collectives (MPI_Allgather_init,
// MPI_Alltoallv_init), which the persistent strategies need on several ranks; true without MPI.
bool have_persistent_mpi();
std::string mpi_library_name();

// How MPI ends with the process (mpi4py, told by ranvier not to finalize at exit, leaves it to
// this): glibc's on_exit hands the exit status over, which Python's own exit hooks never see.
// After status 0, or a status every rank chose together (set_exit_agreed), MPI_Finalize as
// usual; after any other status on a rank of several, one line on stderr and MPI_Abort with that
// status, so that a rank leaving alone (sys.exit(3) in a script) stops the job instead of waiting
// in MPI_Finalize for ranks that wait for it. False where it cannot be installed (no MPI, no
// on_exit): MPI is then left to mpi4py.
bool finalize_mpi_at_exit();
// The line's words around "exited with status N" (the crash report's), and the death watch's
// socket (-1: none), told "failing" first.
void set_exit_report(const std::string& prefix, const std::string& suffix, int notify_fd);
void set_exit_agreed(bool agreed);

}  // namespace ranvier
