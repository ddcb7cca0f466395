#pragma once

#include <chrono>

#include <caf/expected.hpp>

#include "platform/notice_source.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat {

/// Where EC2's instance metadata is: LIFEBOAT_AWS_METADATA (host:port), else
/// 169.254.169.254:80.
caf::expected<endpoint> aws_metadata_endpoint(const env_lookup& env);

/// Whether an IMDSv2 server at `where` hands out a session token within `timeout`.
bool aws_metadata_reachable(const endpoint& where, std::chrono::milliseconds timeout);

/// Watches EC2 spot interruption through IMDSv2. A session token
/// (PUT /latest/api/token) is cached for its lifetime and fetched again on 401.
/// - spot/instance-action: 404 is no notice; {"action", "time"} is a notice
///   "aws:spot-<action>" with `time` (ISO 8601) as its deadline.
/// - events/recommendations/rebalance: a softer, earlier warning. It is logged
///   and, only when `rebalance_is_notice` (spec "aws-rebalance"), becomes a notice
///   "aws:rebalance" with an unknown deadline.
caf::expected<notice_source_ptr> make_aws_source(const env_lookup& env, bool rebalance_is_notice);

}  // namespace lifeboat
