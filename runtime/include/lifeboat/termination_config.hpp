#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace lifeboat {

/// How a worker learns of its end and what it does then; mirrors the
/// reference's TerminationConfig, with the knobs it lacks made explicit.
/// Anything left unset takes the platform's default (GCE, AWS, Azure,
/// Kubernetes, SLURM or generic; see platform/).
struct termination_config {
  /// Polled every `poll_interval`; returning true is a termination notice.
  /// Runs on its own thread, so a slow function never stalls the runtime.
  std::function<bool()> termination_watcher_fn;

  /// Called instead of exiting with `restart_code` once the checkpoint is
  /// committed and this worker left the cluster. The process exits with
  /// `restart_code` if it returns. What it throws leaves run() as it was
  /// thrown, reported to no worker; the handler's end then only stops
  /// lifeboat's threads, and the checkpoint stays in every tier it reached.
  std::function<void()> exit_fn;

  /// Time from the notice until the machine goes away. With a grace period,
  /// training goes on after the first save and a final save is made just in time.
  std::optional<std::chrono::milliseconds> grace_period;

  /// When set, lifeboat writes no checkpoint files: it calls this on every
  /// worker once per save, with the agreed step and the checkpoint directory.
  std::function<void(int64_t step, const std::string& checkpoint_dir)> save_fn;

  /// Signals that are termination notices ("SIGTERM", "SIGUSR1", ...),
  /// beside the platform's (SLURM: SIGUSR1) and SIGHUP, which is one unless
  /// the process started with it ignored (nohup).
  std::vector<std::string> signals{"SIGTERM"};

  /// Notice sources by name ("gce", "aws", "azure", "file:/path"); empty: the platform's.
  std::optional<std::vector<std::string>> notice_sources;

  /// Exit code after a committed preemption checkpoint ("restart me"); unset:
  /// LIFEBOAT_RESTART_CODE (lifeboat-launch sets it), else the platform's (42, GCE 143).
  std::optional<int> restart_code;

  std::chrono::milliseconds poll_interval{1000};

  /// The final save of a grace period starts at deadline - margin -
  /// safety_factor * (round trip + step time + checkpoint time + exit time),
  /// each time a median of recent measurements; the margin is the larger of
  /// 1 s and 5% of the grace period, so the processes end that long before the
  /// deadline. A grace period shorter than that leaves no time to train on:
  /// the first save is the final one.
  double safety_factor = 2.0;

  /// Complete checkpoints kept on disk (>= 1); 2 leaves a fallback for a corrupt newest one.
  int max_to_keep = 2;

  /// Periodic backup saves every this many steps, for failures that come
  /// without notice (0: off). Every worker saves at the same steps.
  int64_t save_every_steps = 0;

  /// Periodic backup saves about every this many seconds (0: off). Rank 0
  /// picks the step and every worker saves at it, as after a notice, but
  /// training goes on.
  std::chrono::seconds save_every_seconds{0};

  /// The trainer's NCCL communicator (an ncclComm_t), given by every worker.
  /// While the handler is constructed, lifeboat splits a communicator of its
  /// own from it (a collective call on it, on the constructing thread), and
  /// the checkpoint-ready barrier becomes a one-element all-reduce there
  /// instead of a round trip through the coordination service. Where a worker
  /// cannot use it (no usable GPU, NCCL not compiled in, none handed over),
  /// all say why and use the coordination service.
  void* nccl_communicator = nullptr;

  /// A peer whose heartbeats stop for this long is lost; at least 100 ms.
  /// Workers send a heartbeat every quarter of it, at most 1 s apart, and
  /// as often as the coordination service asks when its timeout is shorter.
  std::chrono::milliseconds heartbeat_timeout{10000};

  /// A rank that completes no step for this long while a peer is past it is
  /// hung: every worker exits 3 naming it (`rank N failed: hang: ...`), and the
  /// hung rank logs its training thread's stack first. Zero turns detection
  /// off. Unset: LIFEBOAT_HANG_TIMEOUT (seconds), else the larger of 10 x the
  /// cluster's median step time and 30 s. Time in a save is not counted.
  std::optional<std::chrono::milliseconds> hang_timeout;
};

}  // namespace lifeboat
