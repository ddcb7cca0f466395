// Replies of GCE's metadata server (instance/preempted and instance/maintenance-event: status,
// Metadata-Flavor, ETag, value), through the "gce" notice source.

#include "tests/fuzz/metadata_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return lifeboat::fuzz::poll_metadata_source("gce", "GCE_METADATA_HOST", data, size);
}
