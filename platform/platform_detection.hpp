#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "platform/environment.hpp"

namespace lifeboat {

/// What a worker does by default on the platform it runs on.
struct platform_defaults {
  std::string name;                         // gce, aws, azure, kubernetes, slurm, generic
  std::vector<std::string> notice_sources;  // specs for make_notice_source
  int restart_exit_code = 42;               // exit code after a saved checkpoint
  std::chrono::seconds grace_period{0};     // keep training this long after a notice
  std::vector<int> signals;                 // signals that are a termination notice
};

/// The restart code a launcher gives its workers, so that what they exit with
/// after a committed checkpoint is what it restarts them on, whatever the
/// platform's default (1..255, not 3, the failure code).
constexpr char kRestartCodeVariable[] = "LIFEBOAT_RESTART_CODE";

/// The most detection may make a worker wait on a machine that is none of the clouds.
constexpr std::chrono::milliseconds kDetectionBudget{800};

/// The defaults of a named platform, without probing anything:
/// | name       | notice sources | restart code | grace                 | signals          |
/// | generic    | -              | 42           | 0 s                   | SIGTERM          |
/// | gce        | gce            | 143          | 3600 s on GPU VMs, 0  | SIGTERM          |
/// | aws        | aws            | 42           | 120 s (spot warning)  | SIGTERM          |
/// | azure      | azure          | 42           | 30 s (spot eviction)  | SIGTERM          |
/// | kubernetes | -              | 42           | 30 s (pod default)    | SIGTERM          |
/// | slurm      | -              | 42           | 0 s                   | SIGTERM, SIGUSR1 |
/// 143 and the GCE grace periods are TensorFlow's GCE defaults. A GPU VM is one
/// with an NVIDIA driver loaded (/proc/driver/nvidia/gpus). LIFEBOAT_GRACE_PERIOD_S
/// (seconds) overrides the grace period everywhere, and LIFEBOAT_RESTART_CODE
/// the restart code. An unknown name or a malformed value is errc::invalid_config.
caf::expected<platform_defaults> platform_defaults_for(const std::string& name,
                                                       const env_lookup& env);

/// Finds the platform: LIFEBOAT_PLATFORM names it outright (no probes); else
/// KUBERNETES_SERVICE_HOST means kubernetes and SLURM_JOB_ID slurm; else the
/// GCE, AWS and Azure metadata servers are probed in parallel (endpoints as the
/// notice sources read them; GCE at GCE_METADATA_HOST/GCE_METADATA_IP or
/// 169.254.169.254, which needs no DNS) and the first of gce, aws, azure that
/// answers wins. Returns within about `budget`: probes still out then count as
/// failed, giving generic.
caf::expected<platform_defaults> detect_platform(
    const env_lookup& env, std::chrono::milliseconds budget = kDetectionBudget);

/// detect_platform on the process environment.
caf::expected<platform_defaults> detect_platform();

/// LIFEBOAT_RESTART_CODE in `env` as a restart code (is_restart_code):
/// nothing where it is unset; errc::invalid_config with
/// restart_code_variable_refusal where it is no number or no restart code.
caf::expected<std::optional<int>> restart_code_variable(const env_lookup& env);

/// Why LIFEBOAT_RESTART_CODE=`text` is refused: the variable, the rule, the value.
std::string restart_code_variable_refusal(const std::string& text);

/// The defaults of the platform `env` names without probes (LIFEBOAT_PLATFORM,
/// Kubernetes, SLURM; else generic), LIFEBOAT_GRACE_PERIOD_S and
/// LIFEBOAT_RESTART_CODE applied: for a process of the job that probes no
/// metadata server (lifeboat-coordinator). Errors as platform_defaults_for.
caf::expected<platform_defaults> named_platform_defaults(const env_lookup& env);

/// The signals that workers started with `env` take as a notice by their
/// platform's default, as far as the environment tells without probes (the
/// clouds', like generic's, are SIGTERM alone): SIGTERM and SIGUSR1 under
/// SLURM. A launcher forwards these as notices. SIGTERM alone where
/// LIFEBOAT_PLATFORM is malformed (the workers then stop with its error).
std::vector<int> default_notice_signals(const env_lookup& env);

/// The signals of a process of the job that runs no trainer (lifeboat-launch,
/// lifeboat-coordinator). `notices`: those it takes as the job's notice, the
/// workers' (default_notice_signals) and SIGHUP unless it is ignored (nohup).
/// `ignored`: SIGUSR1 and SIGUSR2 where they are none, which such a process
/// ignores with ignored_signal_message: at their default action, one sent
/// to every process of a job (SLURM's --signal=USR1@N) ended it.
struct job_signals {
  std::vector<int> notices;
  std::vector<int> ignored;

  bool is_notice(int signo) const;
  bool is_ignored(int signo) const;
};

/// job_signals for a process started with `env`.
job_signals job_signals_for(const env_lookup& env);

/// What such a process logs as it ignores `signo` (one of job_signals::ignored).
std::string ignored_signal_message(int signo);

}  // namespace lifeboat
