#pragma once

#include <caf/atom.hpp>

namespace lifeboat {

// Atoms of the coordination service's local interface and of the agent's
// interface (see coordination_service.hpp and coordination_agent.hpp).

using workers_atom = caf::atom_constant<caf::atom("workers")>;
using snapshot_atom = caf::atom_constant<caf::atom("snapshot")>;
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
using reset_atom = caf::atom_constant<caf::atom("reset")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using exited_atom = caf::atom_constant<caf::atom("exited")>;

using join_wait_atom = caf::atom_constant<caf::atom("joinwait")>;
using insert_atom = caf::atom_constant<caf::atom("insert")>;
using get_start_atom = caf::atom_constant<caf::atom("getstart")>;
using get_wait_atom = caf::atom_constant<caf::atom("getwait")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using try_get_atom = caf::atom_constant<caf::atom("tryget")>;
using get_prefix_atom = caf::atom_constant<caf::atom("getprefix")>;
using erase_prefix_atom = caf::atom_constant<caf::atom("eraseprfx")>;
using barrier_atom = caf::atom_constant<caf::atom("barrier")>;
using peer_send_atom = caf::atom_constant<caf::atom("peersend")>;
using report_atom = caf::atom_constant<caf::atom("report")>;
using leave_atom = caf::atom_constant<caf::atom("leave")>;
using connect_atom = caf::atom_constant<caf::atom("connect")>;

}  // namespace lifeboat
