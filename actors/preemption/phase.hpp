#pragma once

#include <atomic>

#include "messages/phase.hpp"

namespace lifeboat {

/// A worker's phase as its step resolver last set it, for any thread to read:
/// the coordination agent sends it with every heartbeat (cluster_phase.hpp
/// says how).
class published_phase {
 public:
  void set(phase p) { value_.store(p, std::memory_order_relaxed); }
  phase get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<phase> value_{phase::training};
};

}  // namespace lifeboat
