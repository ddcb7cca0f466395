// TF_CONFIG (a JSON cluster description set by TensorFlow launchers and
// Kubeflow) through cluster discovery, the way a worker reads it at start.
//
// Checked: a cluster it accepts has a rank inside its world size and a
// coordinator host.

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "platform/cluster_discovery.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An embedded NUL ends an environment variable's value.
  std::string tf_config(reinterpret_cast<const char*>(data), size);
  tf_config = tf_config.c_str();
  auto spec = lifeboat::discover_cluster([&](const char* name) -> const char* {
    return std::strcmp(name, "TF_CONFIG") == 0 ? tf_config.c_str() : nullptr;
  });
  if (!spec) return 0;
  if (spec->rank < 0 || spec->rank >= spec->world_size || spec->coordinator_host.empty())
    std::abort();
  return 0;
}
