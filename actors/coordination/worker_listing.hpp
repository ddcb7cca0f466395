#pragma once

#include <cstddef>
#include <vector>

#include "messages/status.pb.h"

namespace lifeboat {

/// Up to this many workers, the coordination service's status lists every
/// rank in `workers`. Beyond it a full list (about 100 bytes a rank in JSON)
/// costs every status request, and every poll of /status, the whole world
/// size on the service's one I/O thread and on the wire: `workers` then holds
/// only the ranks that need a look (a state other than alive, or a
/// straggler), at most this many, lowest rank first.
constexpr size_t status_workers_listed_max = 64;

/// Fills `st`'s `workers` from `rows` (one per rank) as said above, and its
/// metrics with how many ranks are in each state
/// (coordination_workers_<state>) and how many rows were left out of the
/// list (coordination_workers_unlisted).
void list_workers(std::vector<wire::WorkerInfo> rows, wire::ActorStatus& st);

}  // namespace lifeboat
