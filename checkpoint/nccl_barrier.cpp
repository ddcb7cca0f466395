#include "checkpoint/nccl_barrier.hpp"

#include <thread>

#include "checkpoint/device_memory.hpp"
#include "messages/errors.hpp"

namespace lifeboat::checkpoint {

namespace {

// How long the waiting thread sleeps between polls of the stream: short
// against a checkpoint's duration, long enough not to burn a core.
constexpr auto poll_interval = std::chrono::microseconds{200};

caf::error nccl_failure(const char* what, ncclResult_t rc) {
  return make_error(errc::peer_error,
                    std::string{"NCCL barrier: "} + what + ": " + ncclGetErrorString(rc));
}

}  // namespace

caf::expected<std::unique_ptr<nccl_barrier>> nccl_barrier::make(ncclComm_t comm,
                                                                cudaStream_t stream) {
  if (auto err = device::available())
    return make_error(errc::unavailable, "NCCL barrier: " + describe(err));
  if (comm == nullptr) return make_error(errc::invalid_argument, "NCCL barrier: no communicator");
  int* flag = nullptr;
  if (auto rc = cudaMalloc(&flag, sizeof(int)); rc != cudaSuccess)
    return make_error(errc::unavailable,
                      std::string{"NCCL barrier: cudaMalloc failed: "} + cudaGetErrorString(rc));
  return std::unique_ptr<nccl_barrier>{new nccl_barrier(comm, stream, flag)};
}

nccl_barrier::~nccl_barrier() { cudaFree(device_flag_); }

caf::error nccl_barrier::arrive_and_wait(const std::string& name,
                                         std::chrono::milliseconds timeout) {
  if (aborted_)
    return make_error(errc::unavailable,
                      "NCCL barrier '" + name + "': the communicator was aborted by a timeout");
  auto deadline = std::chrono::steady_clock::now() + timeout;
  if (auto rc = ncclAllReduce(device_flag_, device_flag_, 1, ncclInt32, ncclSum, comm_, stream_);
      rc != ncclSuccess && rc != ncclInProgress)
    return nccl_failure("ncclAllReduce", rc);
  for (;;) {
    auto query = cudaStreamQuery(stream_);
    if (query == cudaSuccess) return {};
    if (query != cudaErrorNotReady)
      return make_error(errc::peer_error,
                        "NCCL barrier '" + name + "': " + cudaGetErrorString(query));
    ncclResult_t async_rc = ncclSuccess;
    if (auto rc = ncclCommGetAsyncError(comm_, &async_rc); rc != ncclSuccess)
      return nccl_failure("ncclCommGetAsyncError", rc);
    if (async_rc != ncclSuccess && async_rc != ncclInProgress) {
      ncclCommAbort(comm_);
      aborted_ = true;
      return nccl_failure(name.c_str(), async_rc);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ncclCommAbort(comm_);
      aborted_ = true;
      return make_error(errc::timeout, "NCCL barrier '" + name +
                                           "': not every rank arrived within " +
                                           std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(poll_interval);
  }
}

}  // namespace lifeboat::checkpoint
