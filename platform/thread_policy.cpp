#include "platform/thread_policy.hpp"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "messages/errors.hpp"

namespace lifeboat {

caf::error run_this_thread_as_batch() {
  // Linux takes pid 0 as the calling thread, not the whole process.
  sched_param param{};
  if (::sched_setscheduler(0, SCHED_BATCH, &param) != 0)
    return make_error(errc::unavailable, std::string{"cannot run this thread as SCHED_BATCH: "} +
                                             std::strerror(errno));
  return caf::none;
}

}  // namespace lifeboat
