#pragma once

// For the GPU tests: the ranks of one NCCL communicator as processes of their
// own on one GPU. NCCL refuses two ranks of one host on one device ("Duplicate
// GPU detected"), so each rank claims a host of its own (NCCL_HOSTID) before
// it joins, and the ranks talk through sockets on loopback.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <cuda_runtime.h>
#include <nccl.h>

namespace lifeboat::test {

/// Starts every line a rank's process prints for its test: NCCL prints its own
/// messages (NCCL_DEBUG) to stdout too.
inline constexpr std::string_view rank_line_tag = "rank: ";

/// In the test: a fresh communicator id, as hex for the ranks' command line
/// or environment; empty on failure. The ranks, started afterwards, inherit
/// the loopback interface it chose for NCCL's bootstrap.
inline std::string new_nccl_id() {
  setenv("NCCL_SOCKET_IFNAME", "lo", 0);
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return {};
  std::string hex;
  char byte[3];
  for (char c : id.internal) {
    std::snprintf(byte, sizeof(byte), "%02x", static_cast<unsigned char>(c));
    hex += byte;
  }
  return hex;
}

/// In a rank's process: joins the communicator `hex_id` (from new_nccl_id)
/// on device 0 as `rank` of `world`.
inline ncclResult_t join_nccl(const std::string& hex_id, int rank, int world, ncclComm_t* comm) {
  ncclUniqueId id;
  if (hex_id.size() != 2 * sizeof(id.internal)) return ncclInvalidArgument;
  for (std::size_t i = 0; i < sizeof(id.internal); ++i)
    id.internal[i] = static_cast<char>(std::stoi(hex_id.substr(2 * i, 2), nullptr, 16));
  setenv("NCCL_HOSTID", ("lifeboat-test-rank-" + std::to_string(rank)).c_str(), 1);
  if (cudaSetDevice(0) != cudaSuccess) return ncclUnhandledCudaError;
  return ncclCommInitRank(comm, world, id, rank);
}

}  // namespace lifeboat::test
