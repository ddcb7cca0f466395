#pragma once

#include <atomic>
#include <optional>
#include <string_view>

namespace lifeboat {

/// Where a worker is in the preemption protocol (DESIGN, status endpoint).
enum class phase {
  training,
  notice_received,
  checkpoint_scheduled,
  saving,
  grace_countdown,
  exiting,
};

/// Every phase, in the protocol's order.
inline constexpr phase all_phases[] = {
    phase::training, phase::notice_received, phase::checkpoint_scheduled,
    phase::saving,   phase::grace_countdown, phase::exiting};

inline const char* to_string(phase x) {
  switch (x) {
    case phase::training:
      return "training";
    case phase::notice_received:
      return "notice_received";
    case phase::checkpoint_scheduled:
      return "checkpoint_scheduled";
    case phase::saving:
      return "saving";
    case phase::grace_countdown:
      return "grace_countdown";
    case phase::exiting:
      return "exiting";
  }
  return "training";
}

/// The phase `name` names (to_string's inverse); nothing for any other text.
inline std::optional<phase> phase_from_string(std::string_view name) {
  for (auto p : all_phases)
    if (name == to_string(p)) return p;
  return std::nullopt;
}

/// A worker's phase as its step resolver last set it, for any thread to read:
/// the coordination agent sends it with every heartbeat.
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
