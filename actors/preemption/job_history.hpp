#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "actors/atoms.hpp"

namespace lifeboat {

/// The coordinator's job history: once every sample_interval it samples the
/// workers' steps from `service` (a coordination service, status_atom) and
/// reads the decision events workers published there; it reads them also at
/// each membership event, before a restart drops them with the generation.
/// Answers (history_atom, int32_t view) -> std::string JSON. Ends with a
/// linked actor (the status endpoint it is given to) or an exit message.
caf::actor spawn_job_history(caf::actor_system& sys, const caf::actor& service);

/// A worker's history: answers (history_atom, int32_t view) from this
/// process's own decision_recorder (its own lane and shards; no rates). Ends
/// with a linked actor (the status endpoint it is given to) or an exit message.
caf::actor spawn_local_history(caf::actor_system& sys);

}  // namespace lifeboat
