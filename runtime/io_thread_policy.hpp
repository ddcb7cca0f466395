#pragma once

#include <caf/actor_system.hpp>

namespace lifeboat {

/// Has `sys`'s middleman I/O thread (where a worker's agent, watchers and
/// step resolver run) put itself in SCHED_BATCH (run_this_thread_as_batch),
/// as every worker that does not host the coordination service does: its
/// wake-ups then never preempt the service's fan-out. Returns at once; the
/// thread does it when it next runs, and logs a warning tagged `component`
/// if it cannot.
void run_io_thread_as_batch(caf::actor_system& sys, const char* component);

}  // namespace lifeboat
