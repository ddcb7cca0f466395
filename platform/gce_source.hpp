#pragma once

#include <chrono>
#include <string>

#include <caf/expected.hpp>

#include "platform/notice_source.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat {

/// GCE's metadata server hostname, the default of the notice source.
constexpr char kGceMetadataHost[] = "metadata.google.internal";

/// Where GCE's metadata server is: GCE_METADATA_HOST (host[:port]), else
/// GCE_METADATA_IP, else `fallback_host`.
caf::expected<endpoint> gce_metadata_endpoint(const env_lookup& env,
                                              const std::string& fallback_host = kGceMetadataHost);

/// Whether a GCE metadata server answers at `where` within `timeout` (it must
/// reply to instance/hostname with 200 and `Metadata-Flavor: Google`).
bool gce_metadata_reachable(const endpoint& where, std::chrono::milliseconds timeout);

/// Watches instance/maintenance-event and instance/preempted.
/// - preempted `TRUE`: notice "gce:preempted", deadline now + 30 s (the time a
///   Spot/preemptible VM gets between the soft-off signal and the hard stop).
/// - maintenance-event `TERMINATE_ON_HOST_MAINTENANCE`: notice
///   "gce:maintenance-event", deadline now + 60 s (the event changes about 60 s
///   ahead; GPU VMs get up to an hour, which the platform's grace period covers).
/// - `MIGRATE_ON_HOST_MAINTENANCE` is logged: the VM lives on.
/// Each poll reads preempted, then waits on maintenance-event with a hanging GET
/// (wait_for_change, last_etag, timeout_sec) for the rest of `max_wait`, so a
/// maintenance notice arrives as soon as the server changes it. 503 replies
/// (seen during maintenance) are retried within the poll's time.
caf::expected<notice_source_ptr> make_gce_source(const env_lookup& env);

}  // namespace lifeboat
