#pragma once

namespace lifeboat::bench {

/// 64 real lifeboat-demo workers (no state: --state-mb 0) under
/// lifeboat-launch on this host. Prints: the start (launcher started until
/// every worker logged that it joined the coordination service), one worker's
/// resident memory and threads (by name) while training, and SIGTERM to the
/// launcher until it exited (it exits after every worker saved and exited).
/// Throws bench_error when the launcher or a worker misbehaves.
void run_launch_scale();

}  // namespace lifeboat::bench
