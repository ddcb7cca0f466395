// Replies of Azure's Scheduled Events (JSON, RFC 1123 NotBefore, the acknowledgement), through the
// "azure" notice source.

#include "tests/fuzz/metadata_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return lifeboat::fuzz::poll_metadata_source("azure", "LIFEBOAT_AZURE_METADATA", data, size);
}
