#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "platform/environment.hpp"

namespace lifeboat {

/// Advance warning that this machine (or process) is going away.
struct notice {
  std::string source;            // "gce:maintenance-event", "aws:spot-terminate", "file:/path", ...
  std::string reason;            // human-readable
  int64_t deadline_unix_ms = 0;  // 0: unknown
};

/// Something the poll watcher asks, again and again, whether a notice has come.
class notice_source {
 public:
  virtual ~notice_source() = default;

  /// The spec this source was made from ("gce", "file:/tmp/x", ...).
  virtual std::string name() const = 0;

  /// Called repeatedly from a dedicated thread (never from an actor's thread);
  /// the caller paces the calls. Returns within about `max_wait` (a hanging GET
  /// may use all of it, other sources return at once). A notice once seen keeps
  /// being returned (the caller de-duplicates). An error (metadata server down,
  /// slow or answering garbage) is for the caller to log and retry with backoff.
  virtual caf::expected<std::optional<notice>> poll(std::chrono::milliseconds max_wait) = 0;

  /// Called once the final checkpoint is committed, as the worker leaves, to
  /// let the platform proceed early (Azure: POST StartRequests for the
  /// event). Default: nothing.
  virtual void acknowledge() {}
};

using notice_source_ptr = std::unique_ptr<notice_source>;

/// Makes a source from a spec: "gce", "aws", "aws-rebalance" (AWS, with a
/// rebalance recommendation counted as a notice), "azure" or "file:/path".
/// Metadata endpoints come from `env` (GCE_METADATA_HOST, GCE_METADATA_IP,
/// LIFEBOAT_AWS_METADATA, LIFEBOAT_AZURE_METADATA). An unknown spec is
/// errc::invalid_config listing the known names.
caf::expected<notice_source_ptr> make_notice_source(const std::string& spec, const env_lookup& env);

/// As above, reading the process environment.
caf::expected<notice_source_ptr> make_notice_source(const std::string& spec);

/// The spec names make_notice_source knows, for help texts: "gce, aws, ...".
std::string known_notice_sources();

/// Wraps the user's termination_watcher_fn: true means a notice with an unknown
/// deadline; an exception it throws is returned as an error.
notice_source_ptr make_function_source(std::function<bool()> termination_watcher_fn);

}  // namespace lifeboat
