#pragma once

#include <csignal>

#include "apps/worker_group.hpp"

namespace lifeboat::test {

/// Rank `rank`'s exit with `code`, as the launcher reaps it (pid 100 + rank).
inline apps::worker_exit exited(int rank, int code) { return {rank, 100 + rank, code, 0, false}; }

/// Rank `rank` killed by `signo`; `at_deadline`: by wait_all's deadline.
inline apps::worker_exit killed(int rank, int signo, bool at_deadline = false) {
  return {rank, 100 + rank, -1, signo, at_deadline};
}

/// Rank `rank` killed by the launcher because the service declared it lost.
inline apps::worker_exit killed_as_lost(int rank) {
  apps::worker_exit e{rank, 100 + rank, -1, SIGKILL, false};
  e.killed_as_lost = true;
  return e;
}

/// Rank `rank` killed by the launcher because it outlived a signal the
/// launcher forwarded (worker_group::kill_unheeded).
inline apps::worker_exit killed_unheeded(int rank) {
  apps::worker_exit e{rank, 100 + rank, -1, SIGKILL, false};
  e.killed_unheeded = true;
  return e;
}

}  // namespace lifeboat::test
