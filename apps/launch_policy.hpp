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
/// failure they learn of it through the coordination service; after a worker
/// finished, the others may have work of their own left after training (rank
/// 0 evaluating or uploading the final model), and only one stuck for good
/// is killed. Before, 120 s after the first finished, a rank still at such
/// work was killed, and the generation counted as failed.
constexpr auto preempted_group_exit_bound = 120s;
constexpr auto failed_group_exit_bound = 30s;
constexpr auto finished_group_exit_bound = 30min;
/// Once a failed generation is reaped, how long to wait for the coordination
/// service's word on where the failure began. The service hears of it before
/// any peer can, so the wait ends at once unless it never heard (a worker
/// that failed before it joined).
constexpr auto failure_origin_wait = 1s;
/// How often a launcher looks for workers that the coordination service
/// declared lost for their silence, to kill them (worker_group::kill_lost).
constexpr auto silent_check_interval = 100ms;

/// A generation that ends with the restart code though no worker recorded a
/// notice (a command that is no lifeboat worker, a script that turns every
/// error into that code, workers stopped as they started) is restarted at
/// once free_unnoticed_restarts times in a row; each one after those waits
/// twice as long as the one before, from first_restart_backoff up to
/// max_restart_backoff. A generation that ends otherwise, or in which a
/// worker recorded a notice, ends the run. Why: restarts after the restart
/// code do not count against --max-restarts, and a command that exited with
/// it at once was started 700 times a second, for ever, each start with its
/// lines on stderr (21,015 generations in 30 s). A few such exits on purpose
/// are not slowed, and a loop comes down to one start per 10 s.
constexpr int free_unnoticed_restarts = 5;
constexpr auto first_restart_backoff = 1s;
constexpr auto max_restart_backoff = 10s;

/// How often a launcher that waits to restart looks for a signal.
constexpr auto backoff_check_interval = 50ms;

/// After a launcher forwarded a signal (SIGTERM, a platform's notice,
/// SIGINT) to its workers, how long they may go on with none of them having
/// taken it as a notice (recorded one with the service) or exited. A worker
/// that ignores the signal (no lifeboat handler, a shell that traps it) held
/// its launcher, and the job, for ever where no SIGKILL follows (`timeout`
/// without -k, a person's `kill`). A lifeboat worker records its notice
/// within milliseconds, and ends by itself once it saved or its deadline
/// passed. torchrun waits 30 s as well before it kills its workers.
constexpr auto unheeded_signal_bound = 30s;

/// Decides, for one generation, when the launcher kills workers that did not
/// heed the signal it forwarded (worker_group::kill_unheeded). Not
/// thread-safe: the launcher's main thread asks it.
class unheeded_signal_check {
 public:
  /// True once: at the first call at which the signal was forwarded
  /// (`forwarded_at_ns`, steady-clock nanoseconds; 0: none yet) at least
  /// unheeded_signal_bound before `now`, and `noticed()`, then asked, says
  /// that no worker recorded a notice. Ask it only while no worker of the
  /// generation has exited.
  bool due(std::chrono::steady_clock::time_point now, int64_t forwarded_at_ns,
           const std::function<bool()>& noticed);

 private:
  bool decided_ = false;
};

/// When `check` is due now (`noticed()`: whether a worker recorded a
/// notice), says "SIGNAME was forwarded 30 s ago and no worker took it as a
/// notice or exited (...): killing every worker" and kills `group`'s workers
/// (worker_group::kill_unheeded). Ask it only while no worker of the
/// generation has exited.
void end_unheeded_workers(unheeded_signal_check& check, worker_group& group,
                          int64_t forwarded_at_ns, int signo, const std::function<bool()>& noticed);

/// "SIGNAME was forwarded 30 s ago and no worker took it as a notice or
/// exited (...): killing every worker"; for the launcher of another node
/// (`node`), "... forwarded on node K 30 s ago ...: killing node K's workers".
std::string unheeded_signal_line(int signo, std::optional<int> node = std::nullopt);

/// When a launcher forwards a signal: steady-clock nanoseconds, for
/// unheeded_signal_check.
int64_t forwarded_now_ns();

/// How long the other workers may take once `first` ended: one of the
/// bounds above, by how it ended (0, the restart code, anything else).
std::chrono::seconds group_exit_bound(const worker_exit& first, int restart_code);

/// Writes "lifeboat-launch: LINE" on stderr in a single write: CAF's threads
/// log meanwhile (the coordination service), and none of their lines may cut
/// one of ours.
void say(const std::string& line);

/// A launcher that `signo` stopped while no worker ran (`waiting`: what it
/// was doing then): says so and returns its exit code, as for workers
/// stopped before they saved: the failure code after a SIGINT, the restart
/// code after a notice (SIGTERM, or SIGUSR1 under SLURM).
int stopped_without_workers(int signo, int restart_code, const std::string& waiting);

/// The `waiting` of stopped_without_workers before the first start of a
/// multi-node job, and during a restart's backoff.
constexpr const char* waiting_for_launchers = "waiting for the other launchers: no worker started";
constexpr const char* waiting_to_restart = "waiting for the next start: no worker is running";

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
/// the next generation (no exit code), `delay` after the last one ended, or
/// its exit code.
struct verdict {
  std::vector<std::string> lines;
  std::optional<int> exit_code;
  std::chrono::milliseconds delay{0};
};

/// What a launcher counts across its generations.
struct restart_counts {
  int failures = 0;            // counted against --max-restarts
  int unnoticed_restarts = 0;  // in a row: restart code, and no worker recorded a notice
};

/// The wait before the next start after `unnoticed_restarts` generations in
/// a row that ended with the restart code without a notice.
std::chrono::milliseconds restart_backoff(int unnoticed_restarts);

/// DESIGN "lifeboat-launch": restart after a save unless a signal asked for
/// the end; a failure counts against max_restarts (`counts` holds the
/// running counts); a forwarded notice (any signal but SIGINT) that ended
/// workers before they could save exits with the restart code. `received_signal` is the first
/// signal any launcher of the job forwarded (0: none). `preemption_message`: the notice the
/// generation's workers recorded, empty for none.
verdict decide(const generation_result& result, int received_signal, restart_counts& counts,
               int max_restarts, int restart_code, int world_size,
               const std::function<std::string()>& preemption_message);

}  // namespace lifeboat::apps
