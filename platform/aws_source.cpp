#include "platform/aws_source.hpp"

#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "messages/platform.pb.h"
#include "platform/http_client.hpp"
#include "platform/json.hpp"
#include "platform/metadata_endpoint.hpp"
#include "platform/timestamp.hpp"

namespace lifeboat {

namespace {

constexpr char kComponent[] = "aws_source";
constexpr char kTokenPath[] = "/latest/api/token";
constexpr char kTokenTtlHeader[] = "X-aws-ec2-metadata-token-ttl-seconds";
constexpr char kTokenHeader[] = "X-aws-ec2-metadata-token";
constexpr char kInstanceActionPath[] = "/latest/meta-data/spot/instance-action";
constexpr char kRebalancePath[] = "/latest/meta-data/events/recommendations/rebalance";
constexpr std::chrono::seconds kTokenTtl{21600};
// Fetch a new token this long before the old one expires.
constexpr std::chrono::seconds kTokenRenewMargin{60};
constexpr int kHttpOk = 200;
constexpr int kHttpUnauthorized = 401;
constexpr int kHttpNotFound = 404;

using steady = std::chrono::steady_clock;

caf::expected<http_response> put_token(const endpoint& where, std::chrono::milliseconds timeout) {
  http_request request;
  request.method = "PUT";
  request.host = where.host;
  request.port = where.port;
  request.target = kTokenPath;
  request.headers.push_back({kTokenTtlHeader, std::to_string(kTokenTtl.count())});
  return http_send(request, timeout);
}

class aws_source : public notice_source {
 public:
  aws_source(endpoint where, bool rebalance_is_notice)
      : where_(std::move(where)), rebalance_is_notice_(rebalance_is_notice) {}

  std::string name() const override { return rebalance_is_notice_ ? "aws-rebalance" : "aws"; }

  caf::expected<std::optional<notice>> poll(std::chrono::milliseconds max_wait) override {
    if (seen_) return seen_;
    auto deadline = steady::now() + max_wait;
    auto action = get(kInstanceActionPath, deadline);
    if (!action) return action.error();
    if (*action) {
      wire::AwsInstanceAction parsed;
      if (auto err = parse_json(**action, parsed, where_.to_string() + kInstanceActionPath))
        return err;
      if (parsed.action().empty())
        return make_error(errc::unavailable, where_.to_string() + kInstanceActionPath +
                                                 ": no 'action' in '" + **action + "'");
      auto at = parse_iso8601_ms(parsed.time());
      if (!at) return at.error();
      return found("aws:spot-" + parsed.action(),
                   "EC2 spot instance-action '" + parsed.action() + "' at " + parsed.time(), *at);
    }
    auto rebalance = get(kRebalancePath, deadline);
    if (!rebalance) return rebalance.error();
    if (*rebalance && !rebalance_logged_) {
      wire::AwsRebalanceRecommendation parsed;
      if (auto err = parse_json(**rebalance, parsed, where_.to_string() + kRebalancePath))
        return err;
      rebalance_logged_ = true;
      log(log_level::warning, kComponent, "EC2 rebalance recommendation at ", parsed.notice_time(),
          rebalance_is_notice_ ? "; taken as a termination notice" : "; not a termination notice");
    }
    if (*rebalance && rebalance_is_notice_)
      return found("aws:rebalance", "EC2 rebalance recommendation", 0);
    return std::optional<notice>{};
  }

 private:
  // The body of GET `path`, or nothing on 404.
  caf::expected<std::optional<std::string>> get(const char* path, steady::time_point deadline) {
    for (int attempt = 0;; ++attempt) {
      if (auto err = ensure_token(deadline)) return err;
      http_request request;
      request.host = where_.host;
      request.port = where_.port;
      request.target = path;
      request.headers.push_back({kTokenHeader, token_});
      auto reply = http_send(request, time_left(deadline));
      if (!reply) return reply.error();
      if (reply->status == kHttpUnauthorized && attempt == 0) {
        // The token expired or the server restarted: fetch a new one, once.
        token_.clear();
        continue;
      }
      if (reply->status == kHttpNotFound) return std::optional<std::string>{};
      if (reply->status != kHttpOk)
        return make_error(errc::unavailable,
                          where_.to_string() + path + ": HTTP " + std::to_string(reply->status));
      return std::optional<std::string>{std::move(reply->body)};
    }
  }

  caf::error ensure_token(steady::time_point deadline) {
    if (!token_.empty() && steady::now() < token_expiry_) return caf::none;
    auto requested_at = steady::now();
    auto reply = put_token(where_, time_left(deadline));
    if (!reply) return reply.error();
    if (reply->status != kHttpOk || reply->body.empty())
      return make_error(errc::unavailable, where_.to_string() + kTokenPath + ": HTTP " +
                                               std::to_string(reply->status) + ", no token");
    token_ = reply->body;
    token_expiry_ = requested_at + kTokenTtl - kTokenRenewMargin;
    return caf::none;
  }

  caf::expected<std::optional<notice>> found(std::string source, std::string reason,
                                             int64_t deadline_unix_ms) {
    seen_ = notice{std::move(source), std::move(reason), deadline_unix_ms};
    log(log_level::warning, kComponent, "termination notice: ", seen_->reason);
    return seen_;
  }

  endpoint where_;
  bool rebalance_is_notice_;
  std::string token_;
  steady::time_point token_expiry_;
  bool rebalance_logged_ = false;
  std::optional<notice> seen_;
};

}  // namespace

caf::expected<endpoint> aws_metadata_endpoint(const env_lookup& env) {
  return metadata_endpoint(env, {"LIFEBOAT_AWS_METADATA"}, kLinkLocalMetadataHost);
}

bool aws_metadata_reachable(const endpoint& where, std::chrono::milliseconds timeout) {
  auto reply = put_token(where, timeout);
  return reply && reply->status == kHttpOk && !reply->body.empty();
}

caf::expected<notice_source_ptr> make_aws_source(const env_lookup& env, bool rebalance_is_notice) {
  auto where = aws_metadata_endpoint(env);
  if (!where) return where.error();
  return std::make_unique<aws_source>(std::move(*where), rebalance_is_notice);
}

}  // namespace lifeboat
