#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lifeboat::demo {

/// The demo's model: `words` 64-bit words per worker that change every step
/// as a pure function of (rank, step, state), so a run that was preempted
/// and restarted any number of times ends in the same state as one that was not.
class trainer_state {
 public:
  explicit trainer_state(size_t bytes);

  /// Sets the rank; `fresh`: no checkpoint was restored, so set the initial state.
  void start(int rank, bool fresh);

  /// Applies step `step` (1-based) to the state.
  void apply_step(int64_t step);

  /// A hex digest of the full state.
  std::string digest() const;

  void* data() { return words_.data(); }
  size_t bytes() const { return words_.size() * sizeof(uint64_t); }

 private:
  int rank_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace lifeboat::demo
