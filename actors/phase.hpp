#pragma once

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

}  // namespace lifeboat
