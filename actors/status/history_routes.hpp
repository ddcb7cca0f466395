#pragma once

#include <functional>
#include <optional>
#include <string>

#include <caf/actor.hpp>
#include <caf/event_based_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/status/status_http_server.hpp"

namespace lifeboat {

/// The view a GET of `target` asks for, if it is a history route
/// (/rates, /timeline, /checkpoints; a query string is ignored).
std::optional<history_view> history_view_of(const std::string& method, const std::string& target);

/// Answers a history route for an endpoint actor (`self`) with what `history`
/// (an actor answering history_atom) says within a bound; 503 when it does
/// not answer in time, 404 when the endpoint was given no history.
void answer_history(caf::event_based_actor* self, const caf::actor& history, history_view view,
                    std::function<void(status_http_reply)> done);

}  // namespace lifeboat
