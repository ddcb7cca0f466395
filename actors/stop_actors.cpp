#include "actors/stop_actors.hpp"

#include <caf/after.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>

namespace lifeboat {

bool stop_actors(caf::actor_system& sys, const std::vector<caf::actor>& actors,
                 std::chrono::milliseconds bound) {
  if (actors.empty()) return true;
  caf::scoped_actor self{sys};
  for (auto& actor : actors) {
    self->monitor(actor);
    self->send_exit(actor, caf::exit_reason::user_shutdown);
  }
  bool late = false;
  for (size_t ended = 0; ended < actors.size() && !late;)
    self->receive([&](caf::down_msg&) { ++ended; }, caf::after(bound) >> [&] { late = true; });
  return !late;
}

}  // namespace lifeboat
