#include "checkpoint/device_memory.hpp"

#include "messages/errors.hpp"

#ifdef LIFEBOAT_HAVE_NCCL
#include <cuda_runtime.h>
#endif

namespace lifeboat::checkpoint::device {

#ifdef LIFEBOAT_HAVE_NCCL

namespace {

caf::error cuda_error(const char* call, cudaError_t rc) {
  return make_error(errc::unavailable, std::string{call} + " failed: " + cudaGetErrorString(rc) +
                                           " (" + std::to_string(static_cast<int>(rc)) + ")");
}

}  // namespace

caf::error available() {
  int count = 0;
  if (auto rc = cudaGetDeviceCount(&count); rc != cudaSuccess)
    return cuda_error("cudaGetDeviceCount", rc);
  if (count == 0) return make_error(errc::unavailable, "no CUDA device");
  return {};
}

caf::error copy_to_host(void* host, const void* device_ptr, std::size_t bytes) {
  if (auto rc = cudaMemcpy(host, device_ptr, bytes, cudaMemcpyDeviceToHost); rc != cudaSuccess)
    return cuda_error("cudaMemcpy (device to host)", rc);
  return {};
}

caf::error copy_to_device(void* device_ptr, const void* host, std::size_t bytes) {
  if (auto rc = cudaMemcpy(device_ptr, host, bytes, cudaMemcpyHostToDevice); rc != cudaSuccess)
    return cuda_error("cudaMemcpy (host to device)", rc);
  return {};
}

caf::error pin(void* host, std::size_t bytes) {
  if (auto rc = cudaHostRegister(host, bytes, cudaHostRegisterDefault); rc != cudaSuccess)
    return cuda_error("cudaHostRegister", rc);
  return {};
}

void unpin(void* host) { cudaHostUnregister(host); }

#else

namespace {

caf::error not_compiled_in() {
  return make_error(errc::unavailable, "CUDA is not compiled in (NCCL/CUDA not found at build)");
}

}  // namespace

caf::error available() { return not_compiled_in(); }

caf::error copy_to_host(void*, const void*, std::size_t) { return not_compiled_in(); }

caf::error copy_to_device(void*, const void*, std::size_t) { return not_compiled_in(); }

caf::error pin(void*, std::size_t) { return not_compiled_in(); }

void unpin(void*) {}

#endif

}  // namespace lifeboat::checkpoint::device
