#pragma once

#include <sys/types.h>

#include <chrono>
#include <vector>

namespace lifeboat {

/// How long a child process has to end on SIGTERM before it gets SIGKILL.
constexpr std::chrono::milliseconds child_end_grace{1000};

/// The live children of this process (from /proc: every process whose parent
/// it is), in no particular order.
std::vector<pid_t> child_processes();

/// Ends this process's children and reaps them, for a process about to end
/// itself at once: SIGTERM to each, then SIGKILL to those still there after
/// `grace`. In a child subreaper, the children of those ended become this
/// process's and are ended in turn (at most 8 such rounds). Returns how many
/// it ended.
///
/// Why: a child forked without exec (a PyTorch DataLoader or a
/// multiprocessing.Pool worker) holds copies of every descriptor of its
/// parent, listening sockets included. Outliving a parent that ends without
/// Python's own clean-up, it kept the next generation from binding gloo's
/// port (DataLoader workers look for their parent every 5 s; a pool's
/// workers never do).
///
/// Thread-safety: any thread; it blocks for at most about 2 x `grace` a round.
size_t end_child_processes(std::chrono::milliseconds grace = child_end_grace);

}  // namespace lifeboat
