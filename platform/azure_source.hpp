#pragma once

#include <chrono>

#include <caf/expected.hpp>

#include "platform/notice_source.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat {

/// Where Azure's instance metadata service is: LIFEBOAT_AZURE_METADATA
/// (host:port), else 169.254.169.254:80.
caf::expected<endpoint> azure_metadata_endpoint(const env_lookup& env);

/// Whether Azure's instance metadata (GET /metadata/instance with
/// `Metadata: true`) answers 200 at `where` within `timeout`.
bool azure_metadata_reachable(const endpoint& where, std::chrono::milliseconds timeout);

/// Watches Azure Scheduled Events. A `Preempt` or `Terminate` event is a notice
/// "azure:<type>" whose deadline is the earliest `NotBefore` (an event already
/// `Started` has none: its deadline is now). Other events (Reboot, Redeploy,
/// Freeze) are logged. acknowledge() POSTs StartRequests for the notice's events
/// so that Azure proceeds without waiting out NotBefore.
caf::expected<notice_source_ptr> make_azure_source(const env_lookup& env);

}  // namespace lifeboat
