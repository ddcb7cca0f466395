#include "checkpoint/barrier.hpp"

#include "messages/errors.hpp"

#ifdef LIFEBOAT_HAVE_NCCL
#include "checkpoint/nccl_barrier.hpp"
#endif

namespace lifeboat::checkpoint {

caf::expected<std::unique_ptr<barrier>> make_nccl_barrier(void* nccl_comm, void* cuda_stream) {
#ifdef LIFEBOAT_HAVE_NCCL
  auto result = nccl_barrier::make(static_cast<ncclComm_t>(nccl_comm),
                                   static_cast<cudaStream_t>(cuda_stream));
  if (!result) return std::move(result.error());
  return std::unique_ptr<barrier>{std::move(*result)};
#else
  (void)nccl_comm;
  (void)cuda_stream;
  return make_error(errc::unavailable, "NCCL barrier: NCCL is not compiled in");
#endif
}

}  // namespace lifeboat::checkpoint
