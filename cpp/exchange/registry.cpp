// The list of strategies selectable at run time (--exchange NAME).
#include <stdexcept>

#include "exchange/exchange.hpp"

namespace ranvier {

std::unique_ptr<Exchange> make_allgather_exchange();
std::unique_ptr<Exchange> make_allgather_compressed_exchange();
std::unique_ptr<Exchange> make_alltoallv_exchange();
std::unique_ptr<Exchange> make_alltoall_fixed_exchange();
std::unique_ptr<Exchange> make_p2p_exchange();
std::unique_ptr<Exchange> make_p2p_nbx_exchange();
std::unique_ptr<Exchange> make_neighbor_exchange();
std::unique_ptr<Exchange> make_rma_fence_exchange();
std::unique_ptr<Exchange> make_rma_pscw_exchange();
std::unique_ptr<Exchange> make_hierarchical_exchange();
std::unique_ptr<Exchange> make_persistent_allgather_exchange();
std::unique_ptr<Exchange> make_persistent_alltoall_exchange();
std::unique_ptr<Exchange> make_persistent_p2p_exchange();

namespace {
struct Entry { const char* name; std::unique_ptr<Exchange> (*make)(); };
constexpr Entry kStrategies[] = {
    {"allgather", make_allgather_exchange},
    {"allgather-compressed", make_allgather_compressed_exchange},
    {"alltoallv", make_alltoallv_exchange},
    {"alltoall-fixed", make_alltoall_fixed_exchange},
    {"p2p", make_p2p_exchange},
    {"p2p-nbx", make_p2p_nbx_exchange},
    {"neighbor", make_neighbor_exchange},
    {"rma", make_rma_fence_exchange},
    {"rma-pscw", make_rma_pscw_exchange},
    {"hierarchical", make_hierarchical_exchange},
    {"persistent-allgather", make_persistent_allgather_exchange},
    {"persistent-alltoall", make_persistent_alltoall_exchange},
    {"persistent-p2p", make_persistent_p2p_exchange},
};
}  // namespace

std::unique_ptr<Exchange> make_exchange(const std::string& name) {
  for (const auto& e : kStrategies)
    if (name == e.name) return e.make();
  throw std::invalid_argument("unknown exchange strategy '" + name + "'");
}

std::vector<std::string> exchange_names() {
  std::vector<std::string> names;
  for (const auto& e : kStrategies) names.emplace_back(e.name);
  return names;
}

}  // namespace ranvier
