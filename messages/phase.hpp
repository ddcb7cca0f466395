#pragma once

#include <optional>
#include <string_view>

namespace lifeboat {

/// Where a worker is in the preemption protocol: the vocabulary of the
/// `phase` fields of status.proto (GET /status, /metrics) that DESIGN names.
/// The preemption actors set it; the status endpoint reports it without
/// knowing those actors.
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

}  // namespace lifeboat
