#pragma once

#include <atomic>

#include "messages/phase.hpp"

namespace lifeboat {

/// A worker's phase as its step resolver last set it, for any thread to read:
/// the coordination agent sends it with every heartbeat (cluster_phase.hpp
/// says how).
/// Thread-safety: thread-safe (one atomic). Lifetime: the runtime creates it
/// and shares it with the step resolver (step_resolver_links); the agent's
/// heartbeat function reads it through the runtime, which outlives the agent.
class published_phase {
 public:
  void set(phase p) { value_.store(p, std::memory_order_relaxed); }
  phase get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<phase> value_{phase::training};
};

}  // namespace lifeboat
