// The only file that includes mpi.h.
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "comm/communicator.hpp"

// MPI-4's persistent collectives, referenced weakly: the engine, built against MPI-4 headers
// (the mpich wheel), still loads where an older library of the same ABI (an MPI-3 MPICH, Intel
// MPI, Cray MPICH or MVAPICH, docs/mpi.md, "A cluster's own MPI") is put in at run time; the persistent
// strategies then refuse to run (have_persistent_mpi). Built against MPI-3 headers, they are
// left out. Persistent point-to-point (MPI_Send_init, MPI_Recv_init, MPI_Startall) is MPI-1.
#if MPI_VERSION >= 4
#pragma weak MPI_Allgather_init
#pragma weak MPI_Alltoallv_init
#define RANVIER_PERSISTENT_COLLECTIVES 1
#else
#define RANVIER_PERSISTENT_COLLECTIVES 0
#endif

namespace ranvier {
namespace {

void check(int err, const char* what) {
  if (err == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(err, text, &length) != MPI_SUCCESS) length = 0;  // the library's own words, where it has them
  throw std::runtime_error(std::string("MPI error in ") + what + (length ? ": " + std::string(text, length) : ""));
}

int to_int(size_t v) {
  if (v > size_t(INT_MAX)) throw std::runtime_error("MPI message above 2^31 words");
  return int(v);
}

// Into `out`, whose storage is kept from call to call: no allocation per exchange.
const int* to_int(const std::vector<size_t>& v, std::vector<int>& out) {
  out.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_int(v[i]);
  return out.data();
}

class MpiWindow final : public Window {
 public:
  MpiWindow(MPI_Comm comm, size_t words) : words_(words) {
    check(MPI_Comm_group(comm, &group_), "MPI_Comm_group");
    check(MPI_Win_allocate(MPI_Aint(std::max<size_t>(words, 1) * 8), 8, MPI_INFO_NULL, comm, &base_, &win_),
          "MPI_Win_allocate");
    std::fill(base_, base_ + words, 0);
    check(MPI_Win_fence(0, win_), "MPI_Win_fence");  // zeroes visible before any access
  }
  ~MpiWindow() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    MPI_Win_free(&win_);
    MPI_Group_free(&group_);
  }
  uint64_t* data() override { return base_; }
  size_t words() const override { return words_; }
  void fence() override { check(MPI_Win_fence(0, win_), "MPI_Win_fence"); }
  void post(const std::vector<int>& origins) override {
    MPI_Group g = subgroup(origins);
    check(MPI_Win_post(g, 0, win_), "MPI_Win_post");
    MPI_Group_free(&g);
  }
  void start(const std::vector<int>& targets) override {
    MPI_Group g = subgroup(targets);
    check(MPI_Win_start(g, 0, win_), "MPI_Win_start");
    MPI_Group_free(&g);
  }
  void complete() override { check(MPI_Win_complete(win_), "MPI_Win_complete"); }
  void wait() override { check(MPI_Win_wait(win_), "MPI_Win_wait"); }
  void fetch_add(int rank, size_t offset, uint64_t value, uint64_t* result) override {
    check(MPI_Fetch_and_op(&value, result, MPI_UINT64_T, rank, MPI_Aint(offset), MPI_SUM, win_), "MPI_Fetch_and_op");
  }
  void put(const uint64_t* data, size_t count, int rank, size_t offset) override {
    check(MPI_Put(data, to_int(count), MPI_UINT64_T, rank, MPI_Aint(offset), to_int(count), MPI_UINT64_T, win_),
          "MPI_Put");
  }

 private:
  MPI_Group subgroup(const std::vector<int>& ranks) {
    MPI_Group g;
    check(MPI_Group_incl(group_, int(ranks.size()), ranks.data(), &g), "MPI_Group_incl");
    return g;
  }
  size_t words_;
  uint64_t* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
  MPI_Group group_ = MPI_GROUP_NULL;
};

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of `comm` (a duplicate or a derived communicator).
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  int ranks_per_node_ = 0;  // split_node(): consecutive groups of this many ranks, 0 shared memory

  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    MPI_Comm_free(&comm_);
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
    check(MPI_Allgatherv(send, to_int(count), MPI_UINT64_T, recv, to_int(counts, scratch_.a),
                         to_int(displs, scratch_.b), MPI_UINT64_T, comm_),
          "MPI_Allgatherv");
  }
  void alltoall_word(const uint64_t* send, uint64_t* recv) override {
    check(MPI_Alltoall(send, 1, MPI_UINT64_T, recv, 1, MPI_UINT64_T, comm_), "MPI_Alltoall");
  }
  void alltoallv(const uint64_t* send, const std::vector<size_t>& send_counts, const std::vector<size_t>& send_displs,
                 uint64_t* recv, const std::vector<size_t>& recv_counts,
                 const std::vector<size_t>& recv_displs) override {
    check(MPI_Alltoallv(send, to_int(send_counts, scratch_.a), to_int(send_displs, scratch_.b), MPI_UINT64_T, recv,
                        to_int(recv_counts, scratch_.c), to_int(recv_displs, scratch_.d), MPI_UINT64_T, comm_),
          "MPI_Alltoallv");
  }
  void allreduce_sum(uint64_t* data, size_t count) override {
    check(MPI_Allreduce(MPI_IN_PLACE, data, to_int(count), MPI_UINT64_T, MPI_SUM, comm_), "MPI_Allreduce");
  }
  void allreduce_max(uint64_t* data, size_t count) override {
    check(MPI_Allreduce(MPI_IN_PLACE, data, to_int(count), MPI_UINT64_T, MPI_MAX, comm_), "MPI_Allreduce");
  }
  void bcast(uint64_t* data, size_t count, int root) override {
    check(MPI_Bcast(data, to_int(count), MPI_UINT64_T, root, comm_), "MPI_Bcast");
  }

  Request iallgather(const uint64_t* send, size_t count, uint64_t* recv) override {
    const Request r = open();
    check(MPI_Iallgather(send, to_int(count), MPI_UINT64_T, recv, to_int(count), MPI_UINT64_T, comm_, &requests_[r]),
          "MPI_Iallgather");
    return r;
  }
  Request ialltoall(const uint64_t* send, size_t count, uint64_t* recv) override {
    const Request r = open();
    check(MPI_Ialltoall(send, to_int(count), MPI_UINT64_T, recv, to_int(count), MPI_UINT64_T, comm_, &requests_[r]),
          "MPI_Ialltoall");
    return r;
  }
  Request iallgatherv(const uint64_t* send, size_t count, uint64_t* recv, const std::vector<size_t>& counts,
                      const std::vector<size_t>& displs) override {
    const Request r = open();
    const Counts& k = keep(r, counts, displs, {}, {});
    check(MPI_Iallgatherv(send, to_int(count), MPI_UINT64_T, recv, k.a.data(), k.b.data(), MPI_UINT64_T, comm_,
                          &requests_[r]),
          "MPI_Iallgatherv");
    return r;
  }
  Request ialltoallv(const uint64_t* send, const std::vector<size_t>& send_counts,
                     const std::vector<size_t>& send_displs, uint64_t* recv, const std::vector<size_t>& recv_counts,
                     const std::vector<size_t>& recv_displs) override {
    const Request r = open();
    const Counts& k = keep(r, send_counts, send_displs, recv_counts, recv_displs);
    check(MPI_Ialltoallv(send, k.a.data(), k.b.data(), MPI_UINT64_T, recv, k.c.data(), k.d.data(), MPI_UINT64_T,
                         comm_, &requests_[r]),
          "MPI_Ialltoallv");
    return r;
  }
  Request ibarrier() override {
    const Request r = open();
    check(MPI_Ibarrier(comm_, &requests_[r]), "MPI_Ibarrier");
    return r;
  }
  Request isend(const uint64_t* data, size_t count, int dest, int tag, bool synchronous) override {
    const Request r = open();
    if (synchronous)
      check(MPI_Issend(data, to_int(count), MPI_UINT64_T, dest, tag, comm_, &requests_[r]), "MPI_Issend");
    else
      check(MPI_Isend(data, to_int(count), MPI_UINT64_T, dest, tag, comm_, &requests_[r]), "MPI_Isend");
    return r;
  }
  Request irecv(uint64_t* data, size_t count, int source, int tag) override {
    const Request r = open();
    check(MPI_Irecv(data, to_int(count), MPI_UINT64_T, source, tag, comm_, &requests_[r]), "MPI_Irecv");
    return r;
  }
  bool iprobe(int tag, int& source, size_t& count) override {
    int flag = 0;
    MPI_Status st;
    check(MPI_Iprobe(MPI_ANY_SOURCE, tag, comm_, &flag, &st), "MPI_Iprobe");
    if (!flag) return false;
    int n = 0;
    MPI_Get_count(&st, MPI_UINT64_T, &n);
    source = st.MPI_SOURCE;
    count = size_t(n);
    return true;
  }
  void recv(uint64_t* data, size_t count, int source, int tag) override {
    check(MPI_Recv(data, to_int(count), MPI_UINT64_T, source, tag, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
  }
  bool test(Request r) override {
    int flag = 0;
    check(MPI_Test(&requests_.at(r), &flag, MPI_STATUS_IGNORE), "MPI_Test");
    return flag;  // completed: MPI has set the entry to MPI_REQUEST_NULL, free for reuse
  }
  void wait(Request r) override {
    check(MPI_Wait(&requests_.at(r), MPI_STATUS_IGNORE), "MPI_Wait");
  }

  Persistent allgather_init(const uint64_t* send, size_t count, uint64_t* recv) override {
    need_persistent_collectives();
    const Persistent p = open_persistent();
#if RANVIER_PERSISTENT_COLLECTIVES
    check(MPI_Allgather_init(send, to_int(count), MPI_UINT64_T, recv, to_int(count), MPI_UINT64_T, comm_,
                             MPI_INFO_NULL, &persistent_[p]),
          "MPI_Allgather_init");
#endif
    return p;
  }
  Persistent alltoallv_init(const uint64_t* send, const std::vector<size_t>& send_counts,
                            const std::vector<size_t>& send_displs, uint64_t* recv,
                            const std::vector<size_t>& recv_counts, const std::vector<size_t>& recv_displs) override {
    need_persistent_collectives();
    const Persistent p = open_persistent();
    Counts& k = persistent_counts_[p];  // bound to the operation until it is freed
    to_int(send_counts, k.a); to_int(send_displs, k.b); to_int(recv_counts, k.c); to_int(recv_displs, k.d);
#if RANVIER_PERSISTENT_COLLECTIVES
    check(MPI_Alltoallv_init(send, k.a.data(), k.b.data(), MPI_UINT64_T, recv, k.c.data(), k.d.data(), MPI_UINT64_T,
                             comm_, MPI_INFO_NULL, &persistent_[p]),
          "MPI_Alltoallv_init");
#endif
    return p;
  }
  Persistent send_init(const uint64_t* data, size_t count, int dest, int tag) override {
    const Persistent p = open_persistent();
    check(MPI_Send_init(data, to_int(count), MPI_UINT64_T, dest, tag, comm_, &persistent_[p]), "MPI_Send_init");
    return p;
  }
  Persistent recv_init(uint64_t* data, size_t count, int source, int tag) override {
    const Persistent p = open_persistent();
    check(MPI_Recv_init(data, to_int(count), MPI_UINT64_T, source, tag, comm_, &persistent_[p]), "MPI_Recv_init");
    return p;
  }
  void start_persistent(const std::vector<Persistent>& ops) override {
    if (ops.empty()) return;
    check(MPI_Startall(int(ops.size()), gather(ops)), "MPI_Startall");
    scatter(ops);
  }
  bool test_persistent(const std::vector<Persistent>& ops) override {
    if (ops.empty()) return true;
    // One MPI_Test per request: MPICH 5.0.2's MPI_Testall answered MPI_ERR_IN_STATUS, with every
    // status MPI_SUCCESS, for the persistent all-gathers of the overlapped two-tier exchange.
    int all = 1;
    for (Persistent p : ops) {
      int flag = 0;
      check(MPI_Test(&persistent_.at(p), &flag, MPI_STATUS_IGNORE), "MPI_Test");
      all &= flag;
    }
    return all;
  }
  void wait_persistent(const std::vector<Persistent>& ops) override {
    if (ops.empty()) return;
    statuses_.resize(ops.size());
    check_all(MPI_Waitall(int(ops.size()), gather(ops), statuses_.data()), "MPI_Waitall");
    scatter(ops);
  }
  // MPI_ERR_IN_STATUS: the error of the first request that failed, in the library's words.
  void check_all(int err, const char* what) {
    if (err == MPI_ERR_IN_STATUS)
      for (const MPI_Status& s : statuses_)
        if (s.MPI_ERROR != MPI_SUCCESS) check(s.MPI_ERROR, what);
    check(err, what);
  }
  void free_persistent(Persistent p) override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    MPI_Request& r = persistent_.at(p);
    if (r != MPI_REQUEST_NULL) check(MPI_Request_free(&r), "MPI_Request_free");  // sets r to MPI_REQUEST_NULL
    persistent_counts_[p] = {};
  }

  std::unique_ptr<Communicator> graph(const std::vector<int>& sources, const std::vector<int>& destinations) override {
    MPI_Comm g;
    const int none = 0;  // a valid pointer for an empty list
    check(MPI_Dist_graph_create_adjacent(comm_, int(sources.size()), sources.empty() ? &none : sources.data(),
                                         MPI_UNWEIGHTED, int(destinations.size()),
                                         destinations.empty() ? &none : destinations.data(), MPI_UNWEIGHTED,
                                         MPI_INFO_NULL, 0, &g),
          "MPI_Dist_graph_create_adjacent");
    return std::make_unique<MpiCommunicator>(g);
  }
  void neighbor_alltoall_word(const uint64_t* send, uint64_t* recv) override {
    check(MPI_Neighbor_alltoall(send, 1, MPI_UINT64_T, recv, 1, MPI_UINT64_T, comm_), "MPI_Neighbor_alltoall");
  }
  Request ineighbor_alltoallv(const uint64_t* send, const std::vector<size_t>& send_counts,
                              const std::vector<size_t>& send_displs, uint64_t* recv,
                              const std::vector<size_t>& recv_counts, const std::vector<size_t>& recv_displs) override {
    const Request r = open();
    const Counts& k = keep(r, send_counts, send_displs, recv_counts, recv_displs);
    check(MPI_Ineighbor_alltoallv(send, k.a.data(), k.b.data(), MPI_UINT64_T, recv, k.c.data(), k.d.data(),
                                  MPI_UINT64_T, comm_, &requests_[r]),
          "MPI_Ineighbor_alltoallv");
    return r;
  }
  std::unique_ptr<Communicator> split_node() override {
    MPI_Comm node;
    if (ranks_per_node_ > 0)
      check(MPI_Comm_split(comm_, rank_ / ranks_per_node_, rank_, &node), "MPI_Comm_split");
    else
      check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    return std::make_unique<MpiCommunicator>(node);
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm sub;
    check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub), "MPI_Comm_split");
    if (sub == MPI_COMM_NULL) return nullptr;
    return std::make_unique<MpiCommunicator>(sub);
  }
  std::unique_ptr<Window> window(size_t words) override { return std::make_unique<MpiWindow>(comm_, words); }

 private:
  // Count arrays of a pending v-collective: MPI reads them until the operation completes.
  struct Counts { std::vector<int> a, b, c, d; };
  // A free entry of the request table.
  Request open() {
    for (size_t i = 0; i < requests_.size(); ++i)
      if (requests_[i] == MPI_REQUEST_NULL) return Request(i);  // filled by the MPI call that follows
    requests_.push_back(MPI_REQUEST_NULL);
    counts_.emplace_back();
    return Request(requests_.size() - 1);
  }
  static void need_persistent_collectives() {
    if (!have_persistent_mpi())
      throw std::runtime_error("this MPI library has no persistent collectives (MPI-4, e.g. MPICH 4.0 or later): "
                               "the loaded one is '" + mpi_library_name() + "'; choose another exchange");
  }
  // A free entry of the table of persistent operations (freed entries are MPI_REQUEST_NULL; an
  // inactive persistent request is not).
  Persistent open_persistent() {
    for (size_t i = 0; i < persistent_.size(); ++i)
      if (persistent_[i] == MPI_REQUEST_NULL) return Persistent(i);
    persistent_.push_back(MPI_REQUEST_NULL);
    persistent_counts_.emplace_back();
    return Persistent(persistent_.size() - 1);
  }
  // The handles of `ops` side by side, as MPI_Startall and friends take them, and back.
  MPI_Request* gather(const std::vector<Persistent>& ops) {
    batch_.resize(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) batch_[i] = persistent_.at(ops[i]);
    return batch_.data();
  }
  void scatter(const std::vector<Persistent>& ops) {
    for (size_t i = 0; i < ops.size(); ++i) persistent_[ops[i]] = batch_[i];
  }
  Counts& keep(Request r, const std::vector<size_t>& a, const std::vector<size_t>& b, const std::vector<size_t>& c,
               const std::vector<size_t>& d) {
    Counts& k = counts_[r];
    to_int(a, k.a); to_int(b, k.b); to_int(c, k.c); to_int(d, k.d);
    return k;
  }
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::vector<MPI_Request> requests_;
  std::vector<Counts> counts_;
  // Persistent operations and the count arrays of persistent v-collectives (moving a Counts keeps
  // its arrays' storage, so their addresses hold while the table grows).
  std::vector<MPI_Status> statuses_;       // of the last Waitall
  std::vector<MPI_Request> persistent_, batch_;
  std::vector<Counts> persistent_counts_;
  Counts scratch_;  // the blocking v-collectives' count arrays
};

}  // namespace

std::unique_ptr<Communicator> make_communicator(bool use_mpi, int64_t fortran_handle, int ranks_per_node) {
  if (!use_mpi) return make_local_communicator();
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw std::runtime_error("MPI is not initialised (import mpi4py.MPI first)");
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_FUNNELED)
    throw std::runtime_error("MPI must be initialised with at least MPI_THREAD_FUNNELED");
  MPI_Comm dup;
  check(MPI_Comm_dup(MPI_Comm_f2c(MPI_Fint(fortran_handle)), &dup), "MPI_Comm_dup");
  auto comm = std::make_unique<MpiCommunicator>(dup);
  comm->ranks_per_node_ = ranks_per_node;
  return comm;
}

bool have_mpi() { return true; }

bool have_persistent_mpi() {
#if RANVIER_PERSISTENT_COLLECTIVES
  return &MPI_Allgather_init != nullptr && &MPI_Alltoallv_init != nullptr;
#else
  return false;
#endif
}

std::string mpi_library_name() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string s(version, len);
  return s.substr(0, s.find('\n'));
}

namespace {

// Process-wide by nature, as the exit itself is: set once from Python's main thread.
char g_exit_prefix[256] = "ranvier: error: ";
char g_exit_suffix[128] = "; stopping every rank";
std::atomic<int> g_exit_notify_fd{-1};
std::atomic<bool> g_exit_agreed{false};
bool g_exit_guarded = false;

void copy_text(char* to, size_t size, const std::string& from) {
  const size_t n = std::min(size - 1, from.size());
  std::copy(from.data(), from.data() + n, to);
  to[n] = '\0';
}

void end_mpi(int status, void*) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  int size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (status == 0 || size == 1 || g_exit_agreed.load()) {
    MPI_Finalize();
    return;
  }
  const int notify = g_exit_notify_fd.load();
  if (notify >= 0) {
    static const char failing[] = "failing\n";
    ssize_t ignored = write(notify, failing, sizeof(failing) - 1);
    (void)ignored;
  }
  char line[512];
  const int n = std::snprintf(line, sizeof(line), "\n%sexited with status %d (sys.exit, or an exit status chosen on "
                              "this rank alone)%s\n", g_exit_prefix, status, g_exit_suffix);
  if (n > 0) {
    ssize_t ignored = write(STDERR_FILENO, line, std::min<size_t>(size_t(n), sizeof(line) - 1));
    (void)ignored;
  }
  usleep(300000);  // the launcher forwards stderr through proxies that the abort ends
  MPI_Abort(MPI_COMM_WORLD, status);
}

}  // namespace

bool finalize_mpi_at_exit() {
#if defined(__GLIBC__)
  if (!g_exit_guarded) g_exit_guarded = on_exit(end_mpi, nullptr) == 0;
  return g_exit_guarded;
#else
  return false;
#endif
}

void set_exit_report(const std::string& prefix, const std::string& suffix, int notify_fd) {
  copy_text(g_exit_prefix, sizeof(g_exit_prefix), prefix);
  copy_text(g_exit_suffix, sizeof(g_exit_suffix), suffix);
  g_exit_notify_fd.store(notify_fd);
}

void set_exit_agreed(bool agreed) { g_exit_agreed.store(agreed); }

}  // namespace ranvier
