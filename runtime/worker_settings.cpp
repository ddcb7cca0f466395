#include "runtime/worker_settings.hpp"

#include <algorithm>
#include <csignal>

#include "actors/coordination/progress_tracker.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "platform/host_resolver.hpp"
#include "platform/notice_source.hpp"
#include "platform/signal_names.hpp"
#include "platform/signal_pipe.hpp"
#include "platform/text_parse.hpp"
#include "runtime/config_check.hpp"

namespace lifeboat {

namespace {

constexpr const char* status_port_variable = "LIFEBOAT_STATUS_PORT";
constexpr const char* status_host_variable = "LIFEBOAT_STATUS_HOST";
constexpr const char* hang_timeout_variable = "LIFEBOAT_HANG_TIMEOUT";
constexpr const char* local_dir_variable = "LIFEBOAT_LOCAL_DIR";
constexpr const char* log_level_variable = "LIFEBOAT_LOG_LEVEL";
constexpr int64_t max_port = 65535;
// LIFEBOAT_HANG_TIMEOUT at most (a week): beyond, it is a mistake.
constexpr double max_hang_timeout_s = 7 * 86400;

// termination_config::hang_timeout, else LIFEBOAT_HANG_TIMEOUT (seconds),
// else adaptive, as the service takes it: -1 adaptive, 0 off, else ms.
caf::expected<int64_t> hang_timeout_ms(const termination_config& config, const env_lookup& env) {
  if (config.hang_timeout) return config.hang_timeout->count();
  auto text = env_value(env, hang_timeout_variable);
  if (text == nullptr) return progress_tracker::adaptive_hang_timeout;
  return parse_seconds_as_ms(text, hang_timeout_variable, max_hang_timeout_s);
}

// LIFEBOAT_STATUS_PORT (0: any free port): none when unset.
caf::expected<std::optional<uint16_t>> status_port(const env_lookup& env) {
  auto text = env_value(env, status_port_variable);
  if (text == nullptr) return std::optional<uint16_t>{};
  auto port = parse_integer(text, status_port_variable, 0, max_port);
  if (!port) return port.error();
  return std::optional<uint16_t>{static_cast<uint16_t>(*port)};
}

// A coordinator beyond loopback means the job spans hosts: TLS by default
// (lifeboat-launch says LIFEBOAT_TLS explicitly, so its workers agree). A
// worker alone hosts its service in its own process on loopback: nothing
// crosses a network, and it may have no token to derive a key from. Its
// settings are still read, so that a malformed one is refused there too.
caf::expected<tls_config> cluster_tls_config(const cluster_spec& cluster, const env_lookup& env) {
  auto tls = read_tls_config(env, !is_loopback_host(cluster.coordinator_host));
  if (tls && cluster.world_size == 1 && !cluster.coordinator_external) return tls_config{};
  return tls;
}

}  // namespace

caf::expected<worker_settings> resolve_worker_settings(const termination_config& config,
                                                       const std::string& checkpoint_dir,
                                                       const env_lookup& env,
                                                       const platform_lookup& find_platform) {
  if (auto err = check_config(config)) return err;
  if (checkpoint_dir.empty() && !config.save_fn)
    return make_error(errc::invalid_config, "checkpoint_dir is empty");
  worker_settings out;
  auto cluster = discover_cluster(env);
  if (!cluster) return cluster.error();
  out.cluster = std::move(*cluster);
  auto platform = find_platform(out.cluster);
  if (!platform) return platform.error();
  out.platform_name = platform->name;
  out.restart_code = config.restart_code.value_or(platform->restart_exit_code);
  auto port = status_port(env);
  if (!port) return port.error();
  out.status_port = *port;
  if (auto* host = env_value(env, status_host_variable)) {
    if (!is_numeric_address(host))
      return make_error(errc::invalid_config,
                        std::string{status_host_variable} + "='" + host +
                            "': expected an IPv4 or IPv6 address to bind the status endpoint to");
    out.status_host = host;
  }
  if (auto* local = env_value(env, local_dir_variable)) out.local_dir = local;
  // messages/log reads it for itself (a typo there logs at info and says so);
  // a worker refuses it with the rest of its environment.
  if (auto* level = env_value(env, log_level_variable); level && !parse_log_level(level))
    return make_error(errc::invalid_config, std::string{log_level_variable} + "='" + level +
                                                "': expected debug, info, warning or error");
  auto hang = hang_timeout_ms(config, env);
  if (!hang) return hang.error();
  out.hang_timeout_ms = *hang;
  out.grace_period = config.grace_period.value_or(
      std::chrono::duration_cast<std::chrono::milliseconds>(platform->grace_period));
  out.signals = platform->signals;
  if (hangup_is_a_notice()) out.signals.push_back(SIGHUP);
  // check_config refused every unknown signal name.
  for (auto& name : config.signals) out.signals.push_back(*signal_number(name));
  std::sort(out.signals.begin(), out.signals.end());
  out.signals.erase(std::unique(out.signals.begin(), out.signals.end()), out.signals.end());
  out.notice_sources = config.notice_sources.value_or(platform->notice_sources);
  for (auto& spec : out.notice_sources)
    if (auto source = make_notice_source(spec, env); !source) return source.error();
  auto tls = cluster_tls_config(out.cluster, env);
  if (!tls) return tls.error();
  out.tls = std::move(*tls);
  return out;
}

}  // namespace lifeboat
