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

  std::unique_ptr<Communicator> graph(const std::vector<int>&, const std::vector<int>&) override {
    return std::make_unique<LocalCommunicator>();
  }
  // With one rank a graph has no neighbours (strategies keep their own spikes locally).
  void neighbor_alltoall_word(const uint64_t*, uint64_t*) override {}
  Request ineighbor_alltoallv(const uint64_t*, const std::vector<size_t>&, const std::vector<size_t>&, uint64_t*,
                              const std::vector<size_t>&, const std::vector<size_t>&) override {
    return 0;
  }
  std::unique_ptr<Communicator> split_node(int) override { return std::make_unique<LocalCommunicator>(); }
  std::unique_ptr<Communicator> split(int color, int) override {
    if (color < 0) return nullptr;
    return std::make_unique<LocalCommunicator>();
  }
  std::unique_ptr<Window> window(size_t words) override { return std::make_unique<LocalWindow>(words); }

 private:
  struct Message { int tag; std::vector<uint64_t> data; };
  std::deque<Message> mailbox_;
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
