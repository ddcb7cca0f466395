#pragma once

#include <caf/error.hpp>

namespace lifeboat {

/// Puts the calling thread in Linux's SCHED_BATCH policy: it keeps its fair
/// share of the CPU, at its nice value, but when it wakes up it does not
/// preempt the thread running on that core; it runs when the core is next
/// free or that thread's time slice ends. Any thread may do this without
/// privileges.
caf::error run_this_thread_as_batch();

}  // namespace lifeboat
