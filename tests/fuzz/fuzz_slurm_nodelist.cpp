// SLURM_JOB_NODELIST expansion ("node[01-04,07]"), which decides the host of
// the coordination service under SLURM.
//
// Checked: an expansion is never empty, never over the documented 65536
// hosts, and holds no empty host name.

#include <cstdint>
#include <cstdlib>
#include <string>

#include "platform/slurm_nodelist.hpp"

namespace {

constexpr size_t max_hosts = 65536;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto hosts =
      lifeboat::expand_slurm_nodelist(std::string(reinterpret_cast<const char*>(data), size));
  if (!hosts) return 0;
  if (hosts->empty() || hosts->size() > max_hosts) std::abort();
  for (auto& h : *hosts)
    if (h.empty()) std::abort();
  return 0;
}
