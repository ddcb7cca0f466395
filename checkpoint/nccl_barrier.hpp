#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <cuda_runtime.h>
#include <nccl.h>

#include <caf/expected.hpp>

#include "checkpoint/barrier.hpp"

namespace lifeboat::checkpoint {

/// The checkpoint-ready barrier as an all-reduce of one element on a
/// communicator split from the trainer's (same ranks, same device), on a
/// stream of its own: it completes on every rank only once every rank has
/// launched it. Being lifeboat's own, the communicator never interleaves with
/// the trainer's collectives, which run on another thread in an order the
/// barrier cannot know. Waiting polls the stream and the communicator's
/// asynchronous error; on timeout the split communicator is aborted (NCCL
/// offers no other way out of a collective that will not complete), which
/// leaves the trainer's untouched.
class nccl_barrier : public barrier {
 public:
  /// Splits from `trainer` (a collective call: every rank of `trainer` makes
  /// it, within `timeout`). errc::unavailable without a usable GPU.
  static caf::expected<std::unique_ptr<nccl_barrier>> split_from(ncclComm_t trainer,
                                                                 std::chrono::milliseconds timeout);

  ~nccl_barrier() override;

  caf::error arrive_and_wait(const std::string& name, std::chrono::milliseconds timeout) override;

 private:
  nccl_barrier(ncclComm_t comm, int device, cudaStream_t stream, int* device_flag)
      : comm_(comm), device_(device), stream_(stream), device_flag_(device_flag) {}

  // Aborts the communicator; it cannot be used afterwards.
  void abort();

  ncclComm_t comm_;
  int device_;
  cudaStream_t stream_;
  int* device_flag_;
};

}  // namespace lifeboat::checkpoint
