#include "platform/azure_source.hpp"

#include <mutex>
#include <set>
#include <vector>

#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "messages/platform.pb.h"
#include "platform/clock.hpp"
#include "platform/http_client.hpp"
#include "platform/json.hpp"
#include "platform/metadata_endpoint.hpp"
#include "platform/timestamp.hpp"

namespace lifeboat {

namespace {

constexpr char kComponent[] = "azure_source";
constexpr char kEventsPath[] = "/metadata/scheduledevents?api-version=2020-07-01";
constexpr char kInstancePath[] = "/metadata/instance?api-version=2021-02-01";
constexpr char kMetadataHeader[] = "Metadata";
constexpr char kMetadataValue[] = "true";
constexpr char kContentType[] = "application/json";
constexpr char kPreempt[] = "Preempt";
constexpr char kTerminate[] = "Terminate";
constexpr int kHttpOk = 200;
// Acknowledging is a courtesy that lets the eviction start early; it must not
// hold up the exit for long.
constexpr std::chrono::milliseconds kAcknowledgeTimeout{2000};

http_request metadata_request(const endpoint& where, const char* target) {
  http_request request;
  request.host = where.host;
  request.port = where.port;
  request.target = target;
  request.headers.push_back({kMetadataHeader, kMetadataValue});
  return request;
}

class azure_source : public notice_source {
 public:
  explicit azure_source(endpoint where) : where_(std::move(where)) {}

  std::string name() const override { return "azure"; }

  caf::expected<std::optional<notice>> poll(std::chrono::milliseconds max_wait) override {
    {
      std::lock_guard<std::mutex> guard{mutex_};
      if (seen_) return seen_;
    }
    auto reply = http_send(metadata_request(where_, kEventsPath), max_wait);
    if (!reply) return reply.error();
    auto what = where_.to_string() + kEventsPath;
    if (reply->status != kHttpOk)
      return make_error(errc::unavailable, what + ": HTTP " + std::to_string(reply->status));
    wire::AzureScheduledEvents events;
    if (auto err = parse_json(reply->body, events, what)) return err;

    std::vector<std::string> ids;
    std::string type;
    int64_t deadline = 0;
    for (auto& event : events.events()) {
      if (event.event_type() != kPreempt && event.event_type() != kTerminate) {
        if (logged_.insert(event.event_id()).second)
          log(log_level::info, kComponent, "scheduled event ", event.event_id(), " (",
              event.event_type(), ", not before '", event.not_before(), "') is not a termination");
        continue;
      }
      int64_t at = unix_now_ms();
      if (!event.not_before().empty()) {
        auto parsed = parse_rfc1123_ms(event.not_before());
        if (!parsed) return parsed.error();
        at = *parsed;
      }
      if (ids.empty() || at < deadline) {
        deadline = at;
        type = event.event_type();
      }
      ids.push_back(event.event_id());
    }
    if (ids.empty()) return std::optional<notice>{};
    std::lock_guard<std::mutex> guard{mutex_};
    event_ids_ = std::move(ids);
    seen_ = notice{"azure:" + type,
                   "Azure scheduled event " + type + " (" + event_ids_.front() + ")", deadline};
    log(log_level::warning, kComponent, "termination notice: ", seen_->reason);
    return seen_;
  }

  void acknowledge() override {
    wire::AzureStartRequests body;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      for (auto& id : event_ids_) body.add_start_requests()->set_event_id(id);
    }
    if (body.start_requests_size() == 0) return;
    auto request = metadata_request(where_, kEventsPath);
    request.method = "POST";
    request.headers.push_back({"Content-Type", kContentType});
    request.body = to_json(body);
    auto reply = http_send(request, kAcknowledgeTimeout);
    if (!reply)
      log(log_level::warning, kComponent, "acknowledging failed: ", describe(reply.error()));
    else if (reply->status != kHttpOk)
      log(log_level::warning, kComponent, "acknowledging failed: HTTP ", reply->status);
    else
      log(log_level::info, kComponent, "acknowledged ", request.body);
  }

 private:
  endpoint where_;
  std::set<std::string> logged_;
  std::mutex mutex_;  // guards what acknowledge() reads: event_ids_, seen_
  std::vector<std::string> event_ids_;
  std::optional<notice> seen_;
};

}  // namespace

caf::expected<endpoint> azure_metadata_endpoint(const env_lookup& env) {
  return metadata_endpoint(env, {"LIFEBOAT_AZURE_METADATA"}, kLinkLocalMetadataHost);
}

bool azure_metadata_reachable(const endpoint& where, std::chrono::milliseconds timeout) {
  auto reply = http_send(metadata_request(where, kInstancePath), timeout);
  return reply && reply->status == kHttpOk;
}

caf::expected<notice_source_ptr> make_azure_source(const env_lookup& env) {
  auto where = azure_metadata_endpoint(env);
  if (!where) return where.error();
  return std::make_unique<azure_source>(std::move(*where));
}

}  // namespace lifeboat
