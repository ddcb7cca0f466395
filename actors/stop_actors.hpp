#pragma once

#include <chrono>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

namespace lifeboat {

/// Sends each of `actors` an exit (user_shutdown) and waits until each is
/// down, at most `bound` for each down message. Returns false when one was
/// not down in time. A caller drops its handles only afterwards: CAF 0.17
/// frees a broker's control block on the thread that drops its last handle,
/// which raced the multiplexer still reading it (seen by ThreadSanitizer).
/// Blocks the calling thread; call it from no actor.
bool stop_actors(caf::actor_system& sys, const std::vector<caf::actor>& actors,
                 std::chrono::milliseconds bound);

}  // namespace lifeboat
