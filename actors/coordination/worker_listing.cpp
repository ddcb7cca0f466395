#include "actors/coordination/worker_listing.hpp"

#include <string>

namespace lifeboat {

namespace {

constexpr const char* alive_state = "alive";
constexpr const char* metric_prefix = "coordination_workers_";

bool needs_a_look(const wire::WorkerInfo& w) { return w.state() != alive_state || w.straggler(); }

}  // namespace

void list_workers(std::vector<wire::WorkerInfo> rows, wire::ActorStatus& st) {
  auto& metrics = *st.mutable_metrics();
  // Every state is counted, also those no rank is in: a dashboard sees 0.
  for (auto* state : {"joining", "alive", "left", "lost", "error"})
    metrics[metric_prefix + std::string{state}] = 0;
  for (auto& w : rows) metrics[metric_prefix + w.state()] += 1;
  bool all = rows.size() <= status_workers_listed_max;
  for (auto& w : rows) {
    if (!all &&
        (!needs_a_look(w) || st.workers_size() >= static_cast<int>(status_workers_listed_max)))
      continue;
    *st.add_workers() = std::move(w);
  }
  metrics[std::string{metric_prefix} + "unlisted"] =
      static_cast<double>(rows.size() - static_cast<size_t>(st.workers_size()));
}

}  // namespace lifeboat
