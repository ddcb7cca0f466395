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

/// Ok when an NCCL barrier can be made here; errc::unavailable, with the
/// reason, when NCCL is not compiled in or no CUDA device can be used.
caf::error nccl_barrier_usable();

/// An NCCL barrier on a communicator split from the trainer's (`trainer_comm`,
/// an ncclComm_t). Every rank of `trainer_comm` must call this, within
/// `timeout`. errc::unavailable when nccl_barrier_usable() is not ok.
caf::expected<std::unique_ptr<barrier>> make_nccl_barrier(void* trainer_comm,
                                                          std::chrono::milliseconds timeout);

}  // namespace lifeboat::checkpoint
