#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/state_registry.hpp"

namespace lifeboat::checkpoint::testing {

/// A worker's state in the tests: a host buffer of pattern bytes and a piece
/// of callback state, both derived from one seed, so that a restored state
/// can be checked to be exactly one saved state.
class worker_state {
 public:
  explicit worker_state(std::size_t bytes);
  worker_state(const worker_state&) = delete;
  worker_state& operator=(const worker_state&) = delete;

  void set(int64_t seed);

  /// Whether both parts hold the state of `seed`.
  bool holds(int64_t seed) const;

  std::vector<char> weights;
  std::string meta;
  state_registry registry;
};

/// The seed of a rank's state at a step.
inline int64_t worker_seed(int rank, int64_t step) { return rank * 1000000 + step; }

}  // namespace lifeboat::checkpoint::testing
