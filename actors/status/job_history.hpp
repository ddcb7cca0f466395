#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>

#include "actors/status/status_http_server.hpp"

namespace lifeboat {

/// (history_atom, int32_t view) -> std::string: the JSON of one history view.
using history_atom = caf::atom_constant<caf::atom("history")>;

/// The JSON routes of the history (README "Status endpoint").
enum class history_view : int32_t { rates, timeline, checkpoints };

/// The view a GET of `target` asks for, if it is a history route
/// (/rates, /timeline, /checkpoints; a query string is ignored).
std::optional<history_view> history_view_of(const std::string& method, const std::string& target);

/// The coordinator's job history: once every sample_interval it samples the
/// workers' steps from `service` (a coordination service, status_atom) and
/// reads the decision events workers published there; it reads them also at
/// each membership event, before a restart drops them with the generation.
/// Answers (history_atom, int32_t view) -> std::string JSON. Ends with a
/// linked actor (the status endpoint that spawns it) or an exit message.
caf::actor spawn_job_history(caf::actor_system& sys, const caf::actor& service);

/// Answers a history route for an endpoint actor (`self`): from `history`
/// when there is one (a coordinator), else from this process's own
/// decision_recorder (a worker: its own lane and shards, no rates).
void answer_history(caf::event_based_actor* self, const caf::actor& history, history_view view,
                    std::function<void(status_http_reply)> done);

}  // namespace lifeboat
