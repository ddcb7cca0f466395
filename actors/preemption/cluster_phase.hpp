#pragma once

#include <string>
#include <vector>

#include "messages/phase.hpp"
#include "messages/status.pb.h"

namespace lifeboat {

class coordination_state;

/// What a worker's heartbeats carry for the preemption protocol as their
/// opaque status (the coordination service stores it unread): `p`'s name.
std::string heartbeat_status(phase p);

/// Whether a worker in `p` is in work that is no training step (a save):
/// the coordination service then neither times its step nor finds it hung.
bool pauses_steps(phase p);

/// The job's phase as the coordination service's rows tell, for a
/// coordinator that has no step resolver of its own: exiting once a worker
/// of this generation left, was lost or failed (a worker leaves only to
/// exit); otherwise the furthest phase (in DESIGN's order) a row's `phase`
/// names, and at least notice_received once `notice_recorded` (a worker
/// recorded a notice, which its heartbeat may not have carried yet).
phase cluster_phase(const std::vector<wire::WorkerInfo>& workers, bool notice_recorded);

/// Completes the coordination service's status answer with the preemption
/// protocol's reading of it: each row's `phase` from its rank's heartbeat
/// status (none for an empty or unknown one), and the answer's `phase` from
/// cluster_phase, counting the notices recorded under notice_key_prefix;
/// its `last_checkpoint` is the job's (job_checkpoint of the workers'
/// records under checkpoint_key_prefix).
/// A service_config::status_annotator; runs on the service's thread.
void annotate_preemption_status(const coordination_state& state, wire::ActorStatus& status);

}  // namespace lifeboat
