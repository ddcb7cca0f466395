#pragma once

#include <string>
#include <vector>

#include "messages/status.pb.h"

namespace lifeboat {

/// Content type of the Prometheus text exposition format 0.0.4.
constexpr const char* prometheus_content_type = "text/plain; version=0.0.4; charset=utf-8";

/// Renders GET /metrics from the same data as GET /status: the merged Status
/// and the answers it was merged from. Every family has # HELP and # TYPE
/// lines; each entry of an actor's `metrics` map becomes `lifeboat_<name>`
/// with an `actor` label, so two actors reporting the same name stay apart.
/// Families whose name ends in `_total` are counters, all others gauges.
std::string render_metrics(const wire::Status& merged,
                           const std::vector<wire::ActorStatus>& answers);

}  // namespace lifeboat
