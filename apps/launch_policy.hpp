#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "apps/worker_group.hpp"

namespace lifeboat::apps {

using namespace std::chrono_literals;

/// After the first worker of a generation exits, how long the others may
/// take: after a preemption they are committing the same checkpoint; after a
/// failure they learn of it through the coordination service.
constexpr auto preempted_group_exit_bound = 120s;
constexpr auto failed_group_exit_bound = 30s;
/// Once a failed generation is reaped, how long to wait for the coordination
/// service's word on where the failure began. The service hears of it before
/// any peer can, so the wait ends at once unless it never heard (a worker
/// that failed before it joined).
constexpr auto failure_origin_wait = 1s;
/// How often a launcher looks for workers that the coordination service
/// declared lost for their silence, to kill them (worker_group::kill_lost).
constexpr auto silent_check_interval = 100ms;

/// Whether `e` leaves the generation to end normally (finished, or saved
/// with the restart code), which gives the others the longer bound.
bool ended_normally(const worker_exit& e, int restart_code);

/// Writes "lifeboat-launch: LINE" on stderr in a single write: CAF's threads
/// log meanwhile (the coordination service), and none of their lines may cut
/// one of ours.
void say(const std::string& line);

/// A launcher that `signo` stopped before any worker started (while the
/// launchers of a multi-node job waited for one another): says so and
/// returns its exit code, as for workers stopped before they saved: the
/// restart code after a SIGTERM, the failure code after anything else.
int stopped_before_the_start(int signo, int restart_code);

/// What one generation of workers came to.
enum class outcome { finished, preempted, failed };

struct generation_result {
  outcome result = outcome::finished;
  std::vector<worker_exit> failures;  // most likely cause first
  std::string cause;                  // of a failed generation
};

/// Classifies every exit of a generation (of one node or of all of them).
/// Where the likeliest cause only followed a failure (it exited 3), the cause
/// is `failure_origin()` when that is not empty: where the coordination
/// service saw the failure begin.
generation_result classify_generation(const std::vector<worker_exit>& exits, int restart_code,
                                      const std::function<std::string()>& failure_origin);

/// What the launcher does after a generation: the lines it says, then either
/// the next generation (no exit code) or its exit code.
struct verdict {
  std::vector<std::string> lines;
  std::optional<int> exit_code;
};

/// DESIGN "lifeboat-launch": restart after a save unless a signal asked for
/// the end; a failure counts against max_restarts (`failures` is the running
/// count); a forwarded SIGTERM that ended workers before they could save
/// exits with the restart code. `received_signal` is the first signal any
/// launcher of the job forwarded (0: none).
verdict decide(const generation_result& result, int received_signal, int& failures,
               int max_restarts, int restart_code, int world_size,
               const std::function<std::string()>& preemption_message);

}  // namespace lifeboat::apps
