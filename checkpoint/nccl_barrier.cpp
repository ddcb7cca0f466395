#include "checkpoint/nccl_barrier.hpp"

#include <thread>

#include "messages/errors.hpp"

namespace lifeboat::checkpoint {

namespace {

using clock = std::chrono::steady_clock;

// How long the waiting thread sleeps between polls of the stream: short
// against a checkpoint's duration, long enough not to burn a core.
constexpr auto poll_interval = std::chrono::microseconds{200};
// Destroying the communicator first completes what it still has in flight.
constexpr auto destroy_bound = std::chrono::seconds{5};

caf::error nccl_failure(const std::string& what, ncclResult_t rc) {
  return make_error(errc::peer_error, "NCCL barrier: " + what + ": " + ncclGetErrorString(rc));
}

caf::error cuda_failure(const char* what, cudaError_t rc) {
  return make_error(errc::unavailable,
                    std::string{"NCCL barrier: "} + what + " failed: " + cudaGetErrorString(rc));
}

// Makes `device` this thread's current device for the scope (the trainer's
// thread keeps its own afterwards).
class device_scope {
 public:
  explicit device_scope(int device) {
    cudaGetDevice(&previous_);
    status_ = cudaSetDevice(device);
  }
  ~device_scope() { cudaSetDevice(previous_); }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;
  cudaError_t status() const { return status_; }

 private:
  int previous_ = 0;
  cudaError_t status_ = cudaSuccess;
};

// A non-blocking communicator's pending operation (its creation, its
// finalisation) is done once its asynchronous state leaves ncclInProgress.
caf::error await_done(ncclComm_t comm, const std::string& what, clock::time_point deadline) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    if (auto rc = ncclCommGetAsyncError(comm, &state); rc != ncclSuccess)
      return nccl_failure("ncclCommGetAsyncError", rc);
    if (state == ncclSuccess) return {};
    if (state != ncclInProgress) return nccl_failure(what, state);
    if (clock::now() >= deadline)
      return make_error(errc::timeout, "NCCL barrier: " + what + " did not complete in time");
    std::this_thread::sleep_for(poll_interval);
  }
}

}  // namespace

caf::expected<std::unique_ptr<nccl_barrier>> nccl_barrier::split_from(
    ncclComm_t trainer, std::chrono::milliseconds timeout) {
  if (auto err = nccl_barrier_usable()) return err;
  if (trainer == nullptr)
    return make_error(errc::invalid_argument, "NCCL barrier: no communicator");
  auto deadline = clock::now() + timeout;
  int device = 0;
  int rank = 0;
  if (auto rc = ncclCommCuDevice(trainer, &device); rc != ncclSuccess)
    return nccl_failure("ncclCommCuDevice", rc);
  if (auto rc = ncclCommUserRank(trainer, &rank); rc != ncclSuccess)
    return nccl_failure("ncclCommUserRank", rc);
  device_scope on{device};
  if (on.status() != cudaSuccess) return cuda_failure("cudaSetDevice", on.status());
  // Non-blocking: a rank that never makes the call costs the others a
  // timeout, not a hang.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  if (auto rc = ncclCommSplit(trainer, 0, rank, &comm, &config);
      rc != ncclSuccess && rc != ncclInProgress)
    return nccl_failure("ncclCommSplit", rc);
  if (comm == nullptr)
    return make_error(errc::unavailable, "NCCL barrier: ncclCommSplit made none");
  std::unique_ptr<nccl_barrier> result{new nccl_barrier(comm, device, nullptr, nullptr)};
  if (auto err = await_done(comm, "splitting the trainer's communicator", deadline)) {
    result->abort();
    return err;
  }
  // Its own stream, not synchronised with the default one: the barrier does
  // not wait for the trainer's kernels.
  if (auto rc = cudaStreamCreateWithFlags(&result->stream_, cudaStreamNonBlocking);
      rc != cudaSuccess)
    return cuda_failure("cudaStreamCreateWithFlags", rc);
  if (auto rc = cudaMalloc(&result->device_flag_, sizeof(int)); rc != cudaSuccess)
    return cuda_failure("cudaMalloc", rc);
  return result;
}

nccl_barrier::~nccl_barrier() {
  device_scope on{device_};
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  cudaFree(device_flag_);
  if (comm_ == nullptr) return;
  auto finalised = ncclCommFinalize(comm_);
  if ((finalised == ncclSuccess || finalised == ncclInProgress) &&
      !await_done(comm_, "finalising", clock::now() + destroy_bound))
    ncclCommDestroy(comm_);
  else
    ncclCommAbort(comm_);
}

void nccl_barrier::abort() {
  ncclCommAbort(comm_);
  comm_ = nullptr;
}

caf::error nccl_barrier::arrive_and_wait(const std::string& name,
                                         std::chrono::milliseconds timeout) {
  if (comm_ == nullptr)
    return make_error(errc::unavailable,
                      "NCCL barrier '" + name + "': its communicator was aborted by a failure");
  auto deadline = clock::now() + timeout;
  device_scope on{device_};
  if (on.status() != cudaSuccess) return cuda_failure("cudaSetDevice", on.status());
  if (auto rc = ncclAllReduce(device_flag_, device_flag_, 1, ncclInt32, ncclSum, comm_, stream_);
      rc != ncclSuccess && rc != ncclInProgress)
    return nccl_failure("ncclAllReduce", rc);
  for (;;) {
    ncclResult_t async_rc = ncclSuccess;
    if (auto rc = ncclCommGetAsyncError(comm_, &async_rc); rc != ncclSuccess)
      return nccl_failure("ncclCommGetAsyncError", rc);
    if (async_rc != ncclSuccess && async_rc != ncclInProgress) {
      abort();
      return nccl_failure(name, async_rc);
    }
    // While the non-blocking communicator is still launching the all-reduce,
    // the stream holds nothing yet and would read as done.
    if (async_rc == ncclSuccess) {
      auto query = cudaStreamQuery(stream_);
      if (query == cudaSuccess) return {};
      if (query != cudaErrorNotReady)
        return make_error(errc::peer_error,
                          "NCCL barrier '" + name + "': " + cudaGetErrorString(query));
    }
    if (clock::now() >= deadline) {
      abort();
      return make_error(errc::timeout, "NCCL barrier '" + name +
                                           "': not every rank arrived within " +
                                           std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(poll_interval);
  }
}

}  // namespace lifeboat::checkpoint
