#include "runtime/io_thread_policy.hpp"

#include <caf/io/middleman.hpp>
#include <caf/io/network/multiplexer.hpp>

#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "platform/thread_policy.hpp"

namespace lifeboat {

void run_io_thread_as_batch(caf::actor_system& sys, const char* component) {
  sys.middleman().backend().post([component] {
    if (auto err = run_this_thread_as_batch()) log(log_level::warning, component, describe(err));
  });
}

}  // namespace lifeboat
