#pragma once

#include <cstddef>

#include <caf/error.hpp>

namespace lifeboat::checkpoint::device {

// The CUDA calls the checkpoint store needs. Without CUDA compiled in (the
// build finds NCCL and CUDA together) or without a usable device, every call
// reports errc::unavailable with the reason.

/// Ok when a device can be used; errc::unavailable otherwise (no driver, no device).
caf::error available();

caf::error copy_to_host(void* host, const void* device_ptr, std::size_t bytes);
caf::error copy_to_device(void* device_ptr, const void* host, std::size_t bytes);

/// Page-locks host memory so that device copies run at full speed.
caf::error pin(void* host, std::size_t bytes);
void unpin(void* host);

}  // namespace lifeboat::checkpoint::device
