#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace lifeboat::checkpoint {

/// The checkpoint-ready barrier: every rank arrives after its shard is durable,
/// and none leaves before all arrived. Implemented by the coordination service
/// (actors/) and, on GPUs, by an NCCL collective (nccl_barrier).
class barrier {
 public:
  virtual ~barrier() = default;

  /// Blocks until every rank arrived at the barrier called `name`, or fails
  /// (errc::timeout after `timeout`, errc::peer_error / peer_lost when a peer failed).
  virtual caf::error arrive_and_wait(const std::string& name,
                                     std::chrono::milliseconds timeout) = 0;
};

/// An NCCL barrier on the trainer's communicator (`nccl_comm`, an ncclComm_t)
/// and stream (`cuda_stream`, a cudaStream_t; null for the default stream).
/// errc::unavailable when NCCL is not compiled in or there is no usable GPU.
caf::expected<std::unique_ptr<barrier>> make_nccl_barrier(void* nccl_comm, void* cuda_stream);

}  // namespace lifeboat::checkpoint
