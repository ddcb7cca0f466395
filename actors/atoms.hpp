#pragma once

#include <caf/atom.hpp>

namespace lifeboat {

// Atoms shared by more than one actor's interface. An atom used by one
// protocol only is declared next to that protocol.

/// (status_atom) -> wire::ActorStatus: every lifeboat actor answers this from its own state.
using status_atom = caf::atom_constant<caf::atom("status")>;

}  // namespace lifeboat
