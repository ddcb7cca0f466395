// The preemption protocol's reading of the coordination service: the phase
// each worker's heartbeats report, and the cluster's phase a coordinator shows.
#include "actors/preemption/cluster_phase.hpp"

#include <algorithm>

#include "actors/coordination/coordination_state.hpp"
#include "actors/preemption/checkpoint_record.hpp"
#include "actors/preemption/protocol.hpp"

namespace lifeboat {

std::string heartbeat_status(phase p) { return to_string(p); }

bool pauses_steps(phase p) { return p == phase::saving; }

phase cluster_phase(const std::vector<wire::WorkerInfo>& workers, bool notice_recorded) {
  auto gone = [](const wire::WorkerInfo& w) {
    return w.state() == "left" || w.state() == "lost" || w.state() == "error";
  };
  if (std::any_of(workers.begin(), workers.end(), gone)) return phase::exiting;
  auto furthest = notice_recorded ? phase::notice_received : phase::training;
  for (auto& w : workers)
    if (auto reported = phase_from_string(w.phase())) furthest = std::max(furthest, *reported);
  return furthest;
}

void annotate_preemption_status(const coordination_state& state, wire::ActorStatus& status) {
  for (auto& w : *status.mutable_workers())
    if (auto reported = phase_from_string(state.reported_status(w.rank())))
      w.set_phase(to_string(*reported));
  auto noticed = !state.snapshot(notice_key_prefix).empty();
  status.set_phase(
      to_string(cluster_phase({status.workers().begin(), status.workers().end()}, noticed)));
  *status.mutable_last_checkpoint() = job_checkpoint(state.snapshot(checkpoint_key_prefix));
}

}  // namespace lifeboat
