#pragma once

// The child processes of scale_bench. Each answers one stdin line with one
// stdout line, so the bench drives them and waits on their answers; times
// are steady_clock nanoseconds (system-wide on Linux).

#include <cstdint>

namespace lifeboat::bench {

/// --service WORLD_SIZE HEARTBEAT_TIMEOUT_MS: hosts a coordination service
/// on 127.0.0.1 on an actor system of its own (lifeboat's system_config),
/// prints "port P", then:
///   reset        -> "reset" once the service dropped every worker
///   status       -> "status WORKERS_LISTED BYTES NS" (one status request)
///   exit         -> ends
int run_service_role(int world_size, int heartbeat_timeout_ms);

/// --sim PORT WORLD_SIZE FIRST COUNT HEARTBEAT_MS: simulated workers of ranks
/// FIRST .. FIRST + COUNT - 1 on one actor system (tests/support/
/// simulated_workers.hpp says what they run and what a real worker has
/// besides), prints "ready", then:
///   join           -> "joined T" (T: when the last of them joined)
///   rejoin         -> the same with new workers (after the service's reset)
///   arm            -> "armed" (fresh resolvers and watchers, board cleared)
///   notice R       -> "noticed T" (T: just before the notice went to R's resolver)
///   commits        -> "commits T" when every worker here but the leader
///                     learned of the commit (T: the last one)
///   barrier NAME   -> "barrier ENTRY EXIT" (the last entry and the last exit)
///   report R       -> "reported T" (T: just before R reported an error)
///   failures R L   -> "failures T" once every worker here but R heard that R
///                     failed (L = 1: was lost)
///   leave          -> "left" once every worker left cleanly
///   exit           -> ends
/// Any failure answers "err WHAT".
int run_sim_role(uint16_t port, int world_size, int first_rank, int count, int heartbeat_ms);

}  // namespace lifeboat::bench
