#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "actors/coordination/tls_config.hpp"
#include "lifeboat/termination_config.hpp"
#include "platform/cluster_discovery.hpp"
#include "platform/environment.hpp"
#include "platform/platform_detection.hpp"

namespace lifeboat {

/// What a worker runs with once the termination_config, the environment and
/// the platform's defaults are put together: every value a later stage needs,
/// already checked. A plain value; copy it freely.
struct worker_settings {
  cluster_spec cluster;
  std::string platform_name;
  /// The exit code after a committed preemption checkpoint.
  int restart_code = 0;
  std::chrono::milliseconds grace_period{0};
  /// LIFEBOAT_STATUS_PORT (0: any free port); none: no status endpoint.
  std::optional<uint16_t> status_port;
  /// LIFEBOAT_STATUS_HOST, a numeric address.
  std::string status_host = "127.0.0.1";
  /// LIFEBOAT_LOCAL_DIR: the memory tier's directory; none: the default
  /// (checkpoint::default_memory_dir); checkpoint::memory_tier_off: no memory tier.
  std::optional<std::string> local_dir;
  /// For the coordination service: -1 adaptive, 0 off, else milliseconds.
  int64_t hang_timeout_ms = 0;
  /// Signal numbers that are a termination notice, sorted, without duplicates.
  std::vector<int> signals;
  /// Specs for make_notice_source, each one known to be valid.
  std::vector<std::string> notice_sources;
  /// TLS on the coordination channel and the peer tier: LIFEBOAT_TLS and its
  /// files, on by default when the coordinator is beyond loopback; always off
  /// for a worker alone, whose settings are checked all the same.
  tls_config tls;
};

/// Finds the platform's defaults once the cluster is known (the runtime's
/// calls detect_platform, which may probe metadata servers; a test's returns
/// a fixed platform).
using platform_lookup =
    std::function<caf::expected<platform_defaults>(const cluster_spec& cluster)>;

/// Resolves and checks everything a worker is configured with, before
/// anything is started or written, in this order: `config`, `checkpoint_dir`
/// (may be empty only with a save_fn), the cluster (discover_cluster), the
/// platform (`platform`), LIFEBOAT_STATUS_PORT, LIFEBOAT_STATUS_HOST,
/// LIFEBOAT_LOCAL_DIR, LIFEBOAT_HANG_TIMEOUT, the notice sources and the TLS
/// settings (read_tls_config: the files are read at the first connection); every variable is read
/// through `env`. Fails with the first problem found, saying what is wrong
/// and what is expected (errc::invalid_config, or the platform's error).
/// Thread-safety: reentrant; it reads nothing but its arguments.
caf::expected<worker_settings> resolve_worker_settings(const termination_config& config,
                                                       const std::string& checkpoint_dir,
                                                       const env_lookup& env,
                                                       const platform_lookup& platform);

}  // namespace lifeboat
