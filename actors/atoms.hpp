#pragma once

#include <cstdint>

#include <caf/atom.hpp>

namespace lifeboat {

// Atoms shared by more than one actor's interface. An atom used by one
// protocol only is declared next to that protocol.

/// (status_atom) -> wire::ActorStatus: every lifeboat actor answers this from its own state.
using status_atom = caf::atom_constant<caf::atom("status")>;

/// The JSON views of a job's history that the status endpoint serves
/// (README "Status endpoint"): /rates, /timeline, /checkpoints.
enum class history_view : int32_t { rates, timeline, checkpoints };

/// (history_atom, int32_t view) -> std::string: the JSON of one history view,
/// answered by the preemption module's history actors (job_history.hpp); the
/// status endpoint asks whichever one it was given.
using history_atom = caf::atom_constant<caf::atom("history")>;

}  // namespace lifeboat
