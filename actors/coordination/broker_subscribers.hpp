#pragma once

#include <algorithm>
#include <vector>

#include <caf/actor.hpp>
#include <caf/io/abstract_broker.hpp>

namespace lifeboat {

/// The exit and down handlers that the coordination brokers (agent and
/// service) share. An exit message closes every connection before the broker
/// quits, so its peers see the end at once instead of at a heartbeat timeout;
/// a monitored subscriber that is down leaves `subscribers`, so no event goes
/// to a dead actor. `subscribers` must live as long as the broker (its state).
inline void close_on_exit_forget_on_down(caf::io::abstract_broker* self,
                                         std::vector<caf::actor>& subscribers) {
  self->set_exit_handler([self](const caf::exit_msg& msg) {
    self->close_all();
    self->quit(msg.reason);
  });
  self->set_down_handler([&subscribers](const caf::down_msg& msg) {
    subscribers.erase(
        std::remove_if(subscribers.begin(), subscribers.end(),
                       [&](const caf::actor& x) { return x.address() == msg.source; }),
        subscribers.end());
  });
}

}  // namespace lifeboat
