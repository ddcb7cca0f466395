#include "apps/launch_policy.hpp"

#include <csignal>

#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "platform/signal_names.hpp"

namespace lifeboat::apps {

std::chrono::seconds group_exit_bound(const worker_exit& first, int restart_code) {
  if (first.signal != 0) return failed_group_exit_bound;
  if (first.code == 0) return finished_group_exit_bound;
  return first.code == restart_code ? preempted_group_exit_bound : failed_group_exit_bound;
}

bool unheeded_signal_check::due(std::chrono::steady_clock::time_point now, int64_t forwarded_at_ns,
                                const std::function<bool()>& noticed) {
  if (decided_ || forwarded_at_ns == 0) return false;
  auto forwarded = std::chrono::steady_clock::time_point{std::chrono::nanoseconds{forwarded_at_ns}};
  if (now - forwarded < unheeded_signal_bound) return false;
  decided_ = true;
  return !noticed();
}

void end_unheeded_workers(unheeded_signal_check& check, worker_group& group,
                          int64_t forwarded_at_ns, int signo,
                          const std::function<bool()>& noticed) {
  if (!check.due(std::chrono::steady_clock::now(), forwarded_at_ns, noticed)) return;
  say(unheeded_signal_line(signo));
  group.kill_unheeded();
}

std::string unheeded_signal_line(int signo, std::optional<int> node) {
  auto where = node ? " on node " + std::to_string(*node) : std::string{};
  auto whose = node ? "node " + std::to_string(*node) + "'s workers" : std::string{"every worker"};
  return signal_name(signo) + " was forwarded" + where + " " +
         std::to_string(unheeded_signal_bound.count()) +
         " s ago and no worker took it as a notice or exited (do they ignore it, without a "
         "lifeboat handler?): killing " +
         whose;
}

int64_t forwarded_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void say(const std::string& line) { write_stderr_line("lifeboat-launch: " + line); }

int stopped_without_workers(int signo, int restart_code, const std::string& waiting) {
  say("stopped by " + signal_name(signo) + " while " + waiting);
  return signo == SIGINT ? failure_exit_code : restart_code;
}

std::chrono::milliseconds restart_backoff(int unnoticed_restarts) {
  std::chrono::milliseconds delay{0};
  for (int n = free_unnoticed_restarts + 1; n <= unnoticed_restarts; ++n) {
    delay = delay.count() == 0 ? first_restart_backoff : delay * 2;
    if (delay >= max_restart_backoff) return max_restart_backoff;
  }
  return delay;
}

generation_result classify_generation(const std::vector<worker_exit>& exits, int restart_code,
                                      const std::function<std::string()>& failure_origin) {
  generation_result out;
  for (auto& e : exits) {
    if (e.signal == 0 && e.code == restart_code)
      out.result = out.result == outcome::failed ? outcome::failed : outcome::preempted;
    else if (e.signal != 0 || e.code != 0) {
      out.result = outcome::failed;
      out.failures.push_back(e);
    }
  }
  order_by_cause(out.failures);
  if (out.failures.empty()) return out;
  // Workers that only followed a failure exit 3 in any order; the service
  // saw which worker it began with. A worker killed as lost was killed for
  // what the service saw: its word says why.
  auto& front = out.failures.front();
  out.cause = front.describe();
  if (followed_a_failure(front) || front.killed_as_lost) {
    auto origin = failure_origin();
    if (!origin.empty()) out.cause = origin;
  }
  return out;
}

verdict decide(const generation_result& result, int received_signal, restart_counts& counts,
               int max_restarts, int restart_code, int world_size,
               const std::function<std::string()>& preemption_message) {
  verdict out;
  if (result.result == outcome::finished) {
    out.lines.push_back("all " + std::to_string(world_size) + " workers finished");
    out.exit_code = 0;
    return out;
  }
  if (result.result == outcome::preempted) {
    // Without a notice the workers saved nothing for one: they were stopped
    // as they started, or the command is no lifeboat worker.
    auto notice = preemption_message();
    counts.unnoticed_restarts = notice.empty() ? counts.unnoticed_restarts + 1 : 0;
    out.lines.push_back(notice.empty() ? "workers exited with the restart code, but none "
                                         "recorded a notice: the latest complete checkpoint stands"
                                       : "workers saved a checkpoint and exited with the restart "
                                         "code (" +
                                             notice + ")");
    if (received_signal != 0) {
      out.exit_code = restart_code;
      return out;
    }
    out.delay = restart_backoff(counts.unnoticed_restarts);
    if (out.delay.count() > 0)
      out.lines.push_back(
          "waiting " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(out.delay).count()) +
          " s before the next start: " + std::to_string(counts.unnoticed_restarts) +
          " generations in a row exited with the restart code without a notice");
    return out;
  }
  counts.unnoticed_restarts = 0;
  auto& failures = counts.failures;
  ++failures;
  for (auto& f : result.failures) out.lines.push_back(f.describe());
  // A forwarded notice (SIGTERM; SIGUSR1 under SLURM) that ended workers
  // before they could save (still starting, before their handler took the
  // signal, or a command without lifeboat) is the notice taking effect, not
  // a failure: nothing was torn, the latest complete checkpoint stands, and
  // the job is to be restarted from it, as after a save.
  if (received_signal != 0 && received_signal != SIGINT &&
      ended_by_signal(result.failures, received_signal)) {
    out.lines.push_back("stopped by " + signal_name(received_signal) +
                        " before the workers could save: " + result.cause +
                        "; the latest complete checkpoint stands, exiting with " +
                        std::to_string(restart_code));
    out.exit_code = restart_code;
    return out;
  }
  // Workers that a forwarded signal ended otherwise (SIGINT, where they take
  // only SIGTERM as a notice) are not restarted: the signal asked for the end.
  if (received_signal != 0) {
    out.lines.push_back("stopped by " + signal_name(received_signal) + ": " + result.cause);
    out.exit_code = failure_exit_code;
    return out;
  }
  // A worker that exits 2 found a configuration that cannot work (bad flags
  // or environment, a checkpoint of another world size), and the others
  // only followed it: every restart would end the same way. Before, each of
  // --max-restarts' restarts ran it again and the launcher then exited 3.
  if (ended_by_configuration(result.failures)) {
    out.lines.push_back("giving up: " + result.cause +
                        ": a configuration that cannot work, which no restart changes");
    out.exit_code = config_exit_code;
    return out;
  }
  if (failures > max_restarts) {
    out.lines.push_back("giving up: " + result.cause + " (" + std::to_string(failures) +
                        " failure(s), --max-restarts " + std::to_string(max_restarts) + ")");
    out.exit_code = failure_exit_code;
    return out;
  }
  out.lines.push_back("restarting after failure " + std::to_string(failures) + " of at most " +
                      std::to_string(max_restarts) + ": " + result.cause);
  return out;
}

}  // namespace lifeboat::apps
