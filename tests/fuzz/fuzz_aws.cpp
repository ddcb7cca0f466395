// Replies of EC2's IMDSv2 (token, spot/instance-action JSON and its ISO 8601 time, rebalance
// recommendation), through the "aws-rebalance" notice source.

#include "tests/fuzz/metadata_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return lifeboat::fuzz::poll_metadata_source("aws-rebalance", "LIFEBOAT_AWS_METADATA", data, size);
}
