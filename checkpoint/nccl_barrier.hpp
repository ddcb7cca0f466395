#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <cuda_runtime.h>
#include <nccl.h>

#include <caf/expected.hpp>

#include "checkpoint/barrier.hpp"

namespace lifeboat::checkpoint {

/// The checkpoint-ready barrier as an all-reduce of one element on the
/// trainer's communicator and stream: it completes on every rank only once
/// every rank has launched it. Waiting polls the stream and the communicator's
/// asynchronous error; on timeout the communicator is aborted (NCCL offers no
/// other way out of a collective that will not complete), so the barrier and
/// the trainer's communicator are unusable afterwards.
class nccl_barrier : public barrier {
 public:
  /// errc::unavailable without a usable GPU.
  static caf::expected<std::unique_ptr<nccl_barrier>> make(ncclComm_t comm, cudaStream_t stream);

  ~nccl_barrier() override;

  caf::error arrive_and_wait(const std::string& name, std::chrono::milliseconds timeout) override;

 private:
  nccl_barrier(ncclComm_t comm, cudaStream_t stream, int* device_flag)
      : comm_(comm), stream_(stream), device_flag_(device_flag) {}

  ncclComm_t comm_;
  cudaStream_t stream_;
  int* device_flag_;
  bool aborted_ = false;
};

}  // namespace lifeboat::checkpoint
