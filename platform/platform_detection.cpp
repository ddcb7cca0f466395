#include "platform/platform_detection.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <csignal>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "messages/background_thread.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "platform/aws_source.hpp"
#include "platform/azure_source.hpp"
#include "platform/gce_source.hpp"
#include "platform/metadata_endpoint.hpp"
#include "platform/signal_names.hpp"
#include "platform/signal_pipe.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat {

namespace {

constexpr char kComponent[] = "platform";
constexpr char kGeneric[] = "generic";
constexpr char kNvidiaGpus[] = "/proc/driver/nvidia/gpus";
constexpr int kGceRestartCode = 143;
constexpr std::chrono::seconds kGceGpuGrace{3600};
constexpr std::chrono::seconds kAwsSpotGrace{120};
constexpr std::chrono::seconds kAzureSpotGrace{30};
constexpr std::chrono::seconds kKubernetesGrace{30};
constexpr int64_t kMaxGraceSeconds = 7 * 24 * 3600;

bool has_nvidia_gpu() {
  struct stat info {};
  return ::stat(kNvidiaGpus, &info) == 0;
}

// The cloud probes in order of preference.
constexpr size_t kClouds = 3;
constexpr std::array<const char*, kClouds> kCloudNames{"gce", "aws", "azure"};

enum class probe_result { pending, found, absent };

// Shared with the probe threads, which may outlive detect_platform.
struct probe_state {
  std::mutex mutex;
  std::condition_variable changed;
  std::array<probe_result, kClouds> results{probe_result::pending, probe_result::pending,
                                            probe_result::pending};

  // The preferred cloud that answered once every more preferred one has failed;
  // -1 while undecided; kClouds when all failed.
  int decision() const {
    for (size_t i = 0; i < kClouds; ++i) {
      if (results[i] == probe_result::pending) return -1;
      if (results[i] == probe_result::found) return static_cast<int>(i);
    }
    return static_cast<int>(kClouds);
  }
};

caf::expected<platform_defaults> probe_clouds(const env_lookup& env,
                                              std::chrono::milliseconds budget) {
  auto gce = gce_metadata_endpoint(env, kLinkLocalMetadataHost);
  if (!gce) return gce.error();
  auto aws = aws_metadata_endpoint(env);
  if (!aws) return aws.error();
  auto azure = azure_metadata_endpoint(env);
  if (!azure) return azure.error();
  std::array<std::function<bool()>, kClouds> probes{
      [where = *gce, budget] { return gce_metadata_reachable(where, budget); },
      [where = *aws, budget] { return aws_metadata_reachable(where, budget); },
      [where = *azure, budget] { return azure_metadata_reachable(where, budget); },
  };
  auto state = std::make_shared<probe_state>();
  for (size_t i = 0; i < kClouds; ++i) {
    // Detached: a probe stuck past the budget must not hold the worker up.
    background_thread([state, i, probe = std::move(probes[i])] {
      bool found = probe();
      std::lock_guard<std::mutex> guard{state->mutex};
      state->results[i] = found ? probe_result::found : probe_result::absent;
      state->changed.notify_all();
    }).detach();
  }
  std::unique_lock<std::mutex> lock{state->mutex};
  state->changed.wait_for(lock, budget, [&] { return state->decision() >= 0; });
  auto choice = state->decision();
  lock.unlock();
  if (choice < 0 || choice == static_cast<int>(kClouds))
    return platform_defaults_for(kGeneric, env);
  return platform_defaults_for(kCloudNames[static_cast<size_t>(choice)], env);
}

}  // namespace

caf::expected<platform_defaults> platform_defaults_for(const std::string& name,
                                                       const env_lookup& env) {
  platform_defaults out;
  out.name = name;
  out.restart_exit_code = default_restart_code;
  out.signals = {SIGTERM};
  if (name == "gce") {
    out.notice_sources = {"gce"};
    out.restart_exit_code = kGceRestartCode;
    if (has_nvidia_gpu()) out.grace_period = kGceGpuGrace;
  } else if (name == "aws") {
    out.notice_sources = {"aws"};
    out.grace_period = kAwsSpotGrace;
  } else if (name == "azure") {
    out.notice_sources = {"azure"};
    out.grace_period = kAzureSpotGrace;
  } else if (name == "kubernetes") {
    out.grace_period = kKubernetesGrace;
  } else if (name == "slurm") {
    out.signals.push_back(SIGUSR1);
  } else if (name != kGeneric) {
    return make_error(
        errc::invalid_config,
        "unknown platform '" + name + "' (expected generic, gce, aws, azure, kubernetes or slurm)");
  }
  if (auto* text = env_value(env, "LIFEBOAT_GRACE_PERIOD_S")) {
    auto seconds = parse_integer(text, "LIFEBOAT_GRACE_PERIOD_S", 0, kMaxGraceSeconds);
    if (!seconds) return seconds.error();
    out.grace_period = std::chrono::seconds{*seconds};
  }
  auto code = restart_code_variable(env);
  if (!code) return code.error();
  if (*code) out.restart_exit_code = **code;
  return out;
}

caf::expected<std::optional<int>> restart_code_variable(const env_lookup& env) {
  auto* text = env_value(env, kRestartCodeVariable);
  if (text == nullptr) return std::optional<int>{};
  auto code = parse_integer(text, kRestartCodeVariable, min_restart_code, max_exit_code);
  if (!code) return make_error(errc::invalid_config, restart_code_variable_refusal(text));
  return std::optional<int>{static_cast<int>(*code)};
}

std::string restart_code_variable_refusal(const std::string& text) {
  return std::string{kRestartCodeVariable} + " expects " + restart_code_rule + ", got '" + text +
         "'";
}

namespace {

// The platform the environment alone names: LIFEBOAT_PLATFORM outright, else
// Kubernetes and SLURM by their variables; empty where only probes can tell.
std::string platform_named_by(const env_lookup& env) {
  if (auto* name = env_value(env, "LIFEBOAT_PLATFORM")) return name;
  if (env_value(env, "KUBERNETES_SERVICE_HOST")) return "kubernetes";
  if (env_value(env, "SLURM_JOB_ID")) return "slurm";
  return {};
}

}  // namespace

caf::expected<platform_defaults> detect_platform(const env_lookup& env,
                                                 std::chrono::milliseconds budget) {
  auto named = platform_named_by(env);
  auto result = named.empty() ? probe_clouds(env, budget) : platform_defaults_for(named, env);
  if (!result && env_value(env, "LIFEBOAT_PLATFORM"))
    return wrap_error(errc::invalid_config, "LIFEBOAT_PLATFORM", result.error());
  if (result)
    log(log_level::info, kComponent, "platform ", result->name, ", restart code ",
        result->restart_exit_code, ", grace period ", result->grace_period.count(), " s");
  return result;
}

caf::expected<platform_defaults> detect_platform() {
  return detect_platform(process_environment());
}

caf::expected<platform_defaults> named_platform_defaults(const env_lookup& env) {
  auto named = platform_named_by(env);
  return platform_defaults_for(named.empty() ? kGeneric : named, env);
}

std::vector<int> default_notice_signals(const env_lookup& env) {
  auto defaults = named_platform_defaults(env);
  return defaults ? defaults->signals : std::vector<int>{SIGTERM};
}

bool job_signals::is_notice(int signo) const {
  return std::find(notices.begin(), notices.end(), signo) != notices.end();
}

bool job_signals::is_ignored(int signo) const {
  return std::find(ignored.begin(), ignored.end(), signo) != ignored.end();
}

job_signals job_signals_for(const env_lookup& env) {
  job_signals out;
  out.notices = default_notice_signals(env);
  if (hangup_is_a_notice()) out.notices.push_back(SIGHUP);
  for (auto signo : {SIGUSR1, SIGUSR2})
    if (!out.is_notice(signo)) out.ignored.push_back(signo);
  return out;
}

std::string ignored_signal_message(int signo) {
  return signal_name(signo) +
         " received: no notice to this job's workers (SIGUSR1 is one under SLURM); ignored";
}

}  // namespace lifeboat
