// One process, no MPI: every collective is a copy to self.
#include <algorithm>
#include <deque>
#include <stdexcept>

#include "comm/communicator.hpp"

namespace ranvier {
namespace {

class LocalWindow final : public Window {
 public:
  explicit LocalWindow(size_t words) : data_(words, 0) {}
  uint64_t* data() override { return data_.data(); }
  size_t words() const override { return data_.size(); }
  void fence() override {}
  void post(const std::vector<int>&) override {}
  void start(const std::vector<int>&) override {}
  void complete() override {}
  void wait() override {}
  void fetch_add(int, size_t offset, uint64_t value, uint64_t* result) override {
    *result = data_.at(offset);
    data_[offset] += value;
  }
  void put(const uint64_t* data, size_t count, int, size_t offset) override {
    if (offset + count > data_.size()) throw std::out_of_range("put beyond the window");
    std::copy(data, data + count, data_.begin() + offset);
  }

 private:
  std::vector<uint64_t> data_;
};

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
  void allreduce_max(uint64_t*, size_t) override {}
  void bcast(uint64_t*, size_t, int) override {}

  Request iallgather(const uint64_t* send, size_t count, uint64_t* recv) override {
    std::copy(send, send + count, recv);
    return 0;
  }
  Request ialltoall(const uint64_t* send, size_t count, uint64_t* recv) override {
    std::copy(send, send + count, recv);
    return 0;
  }
  Request iallgatherv(const uint64_t* send, size_t count, uint64_t* recv, const std::vector<size_t>& counts,
                      const std::vector<size_t>& displs) override {
    allgatherv(send, count, recv, counts, displs);
    return 0;
  }
  Request ialltoallv(const uint64_t* send, const std::vector<size_t>& send_counts,
                     const std::vector<size_t>& send_displs, uint64_t* recv, const std::vector<size_t>& recv_counts,
                     const std::vector<size_t>& recv_displs) override {
    alltoallv(send, send_counts, send_displs, recv, recv_counts, recv_displs);
    return 0;
  }
  Request ibarrier() override { return 0; }
  Request isend(const uint64_t* data, size_t count, int, int tag, bool) override {
    mailbox_.push_back({tag, std::vector<uint64_t>(data, data + count)});
    return 0;
  }
  Request irecv(uint64_t* data, size_t count, int source, int tag) override {
    recv(data, count, source, tag);
    return 0;
  }
  bool iprobe(int tag, int& source, size_t& count) override {
    for (const auto& m : mailbox_)
      if (m.tag == tag) { source = 0; count = m.data.size(); return true; }
    return false;
  }
  void recv(uint64_t* data, size_t count, int, int tag) override {
    for (auto it = mailbox_.begin(); it != mailbox_.end(); ++it)
      if (it->tag == tag) {
        std::copy(it->data.begin(), it->data.begin() + std::min(count, it->data.size()), data);
        mailbox_.erase(it);
        return;
      }
    throw std::logic_error("recv on one rank with no message sent to self");
  }
  bool test(Request) override { return true; }
  void wait(Request) override {}

  // Persistent operations on one rank: a collective is a copy to self when started; a send puts
  // its message in the mailbox when started, a receive takes it when waited for (or tested).
  Persistent allgather_init(const uint64_t* send, size_t count, uint64_t* recv) override {
    return open({Op::kCopy, send, recv, count, 0, false});
  }
  Persistent alltoallv_init(const uint64_t* send, const std::vector<size_t>& send_counts,
                            const std::vector<size_t>& send_displs, uint64_t* recv, const std::vector<size_t>&,
                            const std::vector<size_t>& recv_displs) override {
    return open({Op::kCopy, send + send_displs[0], recv + recv_displs[0], send_counts[0], 0, false});
  }
  Persistent send_init(const uint64_t* data, size_t count, int, int tag) override {
    return open({Op::kSend, data, nullptr, count, tag, false});
  }
  Persistent recv_init(uint64_t* data, size_t count, int, int tag) override {
    return open({Op::kRecv, nullptr, data, count, tag, false});
  }
  void start_persistent(const std::vector<Persistent>& ops) override {
    for (Persistent p : ops) {
      Op& op = persistent_.at(p);
      if (op.kind == Op::kCopy) std::copy(op.from, op.from + op.count, op.to);
      if (op.kind == Op::kSend) mailbox_.push_back({op.tag, std::vector<uint64_t>(op.from, op.from + op.count)});
      op.pending = op.kind == Op::kRecv;
    }
  }
  bool test_persistent(const std::vector<Persistent>& ops) override {
    bool all = true;
    for (Persistent p : ops) {
      Op& op = persistent_.at(p);
      int source = 0;
      size_t n = 0;
      if (op.pending && iprobe(op.tag, source, n)) {
        recv(op.to, op.count, source, op.tag);
        op.pending = false;
      }
      all = all && !op.pending;
    }
    return all;
  }
  void wait_persistent(const std::vector<Persistent>& ops) override {
    if (!test_persistent(ops)) throw std::logic_error("persistent receive on one rank with no message sent to self");
  }
  void free_persistent(Persistent p) override { persistent_.at(p) = {}; }

  std::unique_ptr<Communicator> graph(const std::vector<int>&, const std::vector<int>&) override {
    return std::make_unique<LocalCommunicator>();
  }
  // With one rank a graph has no neighbours (strategies keep their own spikes locally).
  void neighbor_alltoall_word(const uint64_t*, uint64_t*) override {}
  Request ineighbor_alltoallv(const uint64_t*, const std::vector<size_t>&, const std::vector<size_t>&, uint64_t*,
                              const std::vector<size_t>&, const std::vector<size_t>&) override {
    return 0;
  }
  std::unique_ptr<Communicator> split_node() override { return std::make_unique<LocalCommunicator>(); }
  std::unique_ptr<Communicator> split(int color, int) override {
    if (color < 0) return nullptr;
    return std::make_unique<LocalCommunicator>();
  }
  std::unique_ptr<Window> window(size_t words) override { return std::make_unique<LocalWindow>(words); }

 private:
  struct Message { int tag; std::vector<uint64_t> data; };
  std::deque<Message> mailbox_;
  struct Op {
    enum Kind { kFree, kCopy, kSend, kRecv } kind = kFree;
    const uint64_t* from = nullptr;
    uint64_t* to = nullptr;
    size_t count = 0;
    int tag = 0;
    bool pending = false;  // a started receive not yet matched
  };
  Persistent open(Op op) {
    for (size_t i = 0; i < persistent_.size(); ++i)
      if (persistent_[i].kind == Op::kFree) { persistent_[i] = op; return Persistent(i); }
    persistent_.push_back(op);
    return Persistent(persistent_.size() - 1);
  }
  std::vector<Op> persistent_;
};

}  // namespace

std::unique_ptr<Communicator> make_local_communicator() { return std::make_unique<LocalCommunicator>(); }

#ifndef RANVIER_HAVE_MPI
std::unique_ptr<Communicator> make_communicator(bool use_mpi, int64_t, int) {
  if (use_mpi)
    throw std::runtime_error("this ranvier was built without MPI; install an MPI (pip install mpich mpi4py) "
                             "and reinstall ranvier to run on several ranks");
  return make_local_communicator();
}
bool have_mpi() { return false; }
bool have_persistent_mpi() { return true; }
std::string mpi_library_name() { return "none"; }
bool finalize_mpi_at_exit() { return false; }
void set_exit_report(const std::string&, const std::string&, int) {}
void set_exit_agreed(bool) {}
#endif

}  // namespace ranvier
