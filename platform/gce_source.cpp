#include "platform/gce_source.hpp"

#include <thread>

#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "platform/clock.hpp"
#include "platform/http_client.hpp"
#include "platform/metadata_endpoint.hpp"

namespace lifeboat {

namespace {

constexpr char kComponent[] = "gce_source";
constexpr char kPathPrefix[] = "/computeMetadata/v1/";
constexpr char kFlavorHeader[] = "Metadata-Flavor";
constexpr char kFlavorValue[] = "Google";
constexpr char kPreemptedKey[] = "instance/preempted";
constexpr char kMaintenanceKey[] = "instance/maintenance-event";
constexpr char kHostnameKey[] = "instance/hostname";
constexpr char kInitialEtag[] = "0";
constexpr char kTerminate[] = "TERMINATE_ON_HOST_MAINTENANCE";
constexpr char kMigrate[] = "MIGRATE_ON_HOST_MAINTENANCE";
constexpr char kNone[] = "NONE";
constexpr int kHttpOk = 200;
constexpr int kHttpUnavailable = 503;
constexpr std::chrono::milliseconds kPreemptedNoticeLead{30'000};
constexpr std::chrono::milliseconds kTerminateNoticeLead{60'000};
constexpr std::chrono::milliseconds kRetryDelay{200};
// A hanging GET asks the server to answer this long before our own deadline, so
// the reply (not our timeout) ends the wait.
constexpr std::chrono::milliseconds kHangingMargin{500};
constexpr std::chrono::seconds kMinHangingWait{1};

struct metadata_value {
  std::string value;
  std::string etag;
};

class gce_source : public notice_source {
 public:
  explicit gce_source(endpoint where) : where_(std::move(where)) {}

  std::string name() const override { return "gce"; }

  caf::expected<std::optional<notice>> poll(std::chrono::milliseconds max_wait) override {
    if (seen_) return seen_;
    auto deadline = std::chrono::steady_clock::now() + max_wait;
    auto preempted = get(kPreemptedKey, "", deadline);
    if (!preempted) return preempted.error();
    if (preempted->value == "TRUE")
      return found("gce:preempted", "GCE preempted this VM", kPreemptedNoticeLead);
    if (preempted->value != "FALSE") return unexpected(kPreemptedKey, preempted->value);

    auto maintenance = get(kMaintenanceKey, hanging_query(deadline), deadline);
    if (!maintenance) return maintenance.error();
    maintenance_etag_ = maintenance->etag.empty() ? kInitialEtag : maintenance->etag;
    auto& value = maintenance->value;
    if (value != kMigrate) migrate_logged_ = false;
    if (value == kTerminate)
      return found("gce:maintenance-event", "GCE host maintenance will terminate this VM",
                   kTerminateNoticeLead);
    if (value == kMigrate) {
      if (!migrate_logged_)
        log(log_level::info, kComponent, "host maintenance will live-migrate this VM; no notice");
      migrate_logged_ = true;
      return std::optional<notice>{};
    }
    if (value != kNone) return unexpected(kMaintenanceKey, value);
    return std::optional<notice>{};
  }

 private:
  // "?wait_for_change=..." when there is time for a hanging GET, else "".
  std::string hanging_query(std::chrono::steady_clock::time_point deadline) const {
    auto wait =
        std::chrono::duration_cast<std::chrono::seconds>(time_left(deadline) - kHangingMargin);
    if (wait < kMinHangingWait) return "";
    return "?wait_for_change=true&last_etag=" + maintenance_etag_ +
           "&timeout_sec=" + std::to_string(wait.count());
  }

  caf::expected<metadata_value> get(const char* key, const std::string& query,
                                    std::chrono::steady_clock::time_point deadline) {
    http_request request;
    request.host = where_.host;
    request.port = where_.port;
    request.target = std::string{kPathPrefix} + key + query;
    request.headers.push_back({kFlavorHeader, kFlavorValue});
    for (;;) {
      auto reply = http_send(request, time_left(deadline));
      if (!reply) return reply.error();
      if (reply->status == kHttpUnavailable && time_left(deadline) > kRetryDelay) {
        // The metadata server answers 503 for a moment during maintenance.
        std::this_thread::sleep_for(kRetryDelay);
        continue;
      }
      if (reply->status != kHttpOk)
        return make_error(errc::unavailable, where_.to_string() + request.target + ": HTTP " +
                                                 std::to_string(reply->status));
      if (reply->header(kFlavorHeader) != std::optional<std::string>{kFlavorValue})
        return make_error(errc::unavailable, where_.to_string() +
                                                 " is not a GCE metadata server (no '" +
                                                 kFlavorHeader + ": " + kFlavorValue + "')");
      return metadata_value{std::string{trim(reply->body)}, reply->header("ETag").value_or("")};
    }
  }

  caf::expected<std::optional<notice>> found(const char* source, const char* reason,
                                             std::chrono::milliseconds lead) {
    seen_ = notice{source, reason, unix_now_ms() + lead.count()};
    log(log_level::warning, kComponent, "termination notice: ", reason);
    return seen_;
  }

  caf::error unexpected(const char* key, const std::string& value) const {
    return make_error(errc::unavailable,
                      where_.to_string() + ": unexpected value of " + key + ": '" + value + "'");
  }

  endpoint where_;
  std::string maintenance_etag_ = kInitialEtag;
  bool migrate_logged_ = false;
  std::optional<notice> seen_;
};

}  // namespace

caf::expected<endpoint> gce_metadata_endpoint(const env_lookup& env,
                                              const std::string& fallback_host) {
  return metadata_endpoint(env, {"GCE_METADATA_HOST", "GCE_METADATA_IP"}, fallback_host);
}

bool gce_metadata_reachable(const endpoint& where, std::chrono::milliseconds timeout) {
  http_request request;
  request.host = where.host;
  request.port = where.port;
  request.target = std::string{kPathPrefix} + kHostnameKey;
  request.headers.push_back({kFlavorHeader, kFlavorValue});
  auto reply = http_send(request, timeout);
  return reply && reply->status == kHttpOk &&
         reply->header(kFlavorHeader) == std::optional<std::string>{kFlavorValue};
}

caf::expected<notice_source_ptr> make_gce_source(const env_lookup& env) {
  auto where = gce_metadata_endpoint(env);
  if (!where) return where.error();
  return std::make_unique<gce_source>(std::move(*where));
}

}  // namespace lifeboat
