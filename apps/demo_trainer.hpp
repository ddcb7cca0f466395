#pragma once

#include <cstdint>
#include <string>

#include "checkpoint/host_memory.hpp"

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

  void* data() { return words_; }
  size_t bytes() const { return count_ * sizeof(uint64_t); }

 private:
  int rank_ = 0;
  // Huge pages, faulted in at construction: a restore reads into it at the
  // speed of a memcpy (host_memory says why).
  checkpoint::host_memory memory_;
  uint64_t* words_;
  size_t count_;
};

}  // namespace lifeboat::demo
