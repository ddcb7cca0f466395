#pragma once

#include <cstdint>
#include <optional>

namespace lifeboat {

/// A lower bound on the earliest of many deadlines, kept in O(1) per change
/// so the coordination service does not scan every worker or request after
/// each frame: adding a deadline lowers the bound, removing one leaves it
/// where it was. Its owner scans when the bound is reached (a scan at a stale
/// bound finds nothing due) and then sets the exact earliest with reset().
/// Not thread-safe; owned by one coordination_state.
class deadline_floor {
 public:
  void lower_to(int64_t due_ms) {
    if (!due_ms_ || due_ms < *due_ms_) due_ms_ = due_ms;
  }

  /// The earliest pending deadline after a scan (nullopt: none).
  void reset(std::optional<int64_t> due_ms = std::nullopt) { due_ms_ = due_ms; }

  bool reached(int64_t now_ms) const { return due_ms_ && *due_ms_ <= now_ms; }

  std::optional<int64_t> due_ms() const { return due_ms_; }

 private:
  std::optional<int64_t> due_ms_;
};

/// The due time of a wait of `timeout_ms` that starts at `now_ms`. The
/// service's clock counts whole milliseconds, truncated, so a wait due
/// exactly `timeout_ms` later could end up to 1 ms before its timeout passed
/// (seen: a get with a 100 ms timeout answered after 99.94 ms); one more
/// never ends early.
inline int64_t due_after(int64_t now_ms, int64_t timeout_ms) { return now_ms + timeout_ms + 1; }

}  // namespace lifeboat
