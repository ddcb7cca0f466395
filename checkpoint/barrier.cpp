#include "checkpoint/barrier.hpp"

#include "checkpoint/device_memory.hpp"
#include "messages/errors.hpp"

#ifdef LIFEBOAT_HAVE_NCCL
#include "checkpoint/nccl_barrier.hpp"
#endif

namespace lifeboat::checkpoint {

caf::error nccl_barrier_usable() {
  if (auto err = device::available()) return wrap_error(errc::unavailable, "NCCL barrier", err);
  return {};
}

caf::expected<std::unique_ptr<barrier>> make_nccl_barrier(void* trainer_comm,
                                                          std::chrono::milliseconds timeout) {
#ifdef LIFEBOAT_HAVE_NCCL
  auto result = nccl_barrier::split_from(static_cast<ncclComm_t>(trainer_comm), timeout);
  if (!result) return std::move(result.error());
  return std::unique_ptr<barrier>{std::move(*result)};
#else
  (void)trainer_comm;
  (void)timeout;
  return nccl_barrier_usable();
#endif
}

}  // namespace lifeboat::checkpoint
