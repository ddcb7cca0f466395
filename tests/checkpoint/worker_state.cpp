#include "tests/checkpoint/worker_state.hpp"

#include "tests/checkpoint/test_support.hpp"

namespace lifeboat::checkpoint::testing {

namespace {

std::string meta_of(int64_t seed) { return "seed=" + std::to_string(seed); }

}  // namespace

worker_state::worker_state(std::size_t bytes) : weights(bytes) {
  (void)registry.add_host_buffer("weights", weights.data(), weights.size());
  (void)registry.add_callbacks(
      "meta", [this] { return meta; }, [this](const std::string& bytes) { meta = bytes; });
}

void worker_state::set(int64_t seed) {
  fill_pattern(weights.data(), weights.size(), static_cast<uint64_t>(seed));
  meta = meta_of(seed);
}

bool worker_state::holds(int64_t seed) const {
  return meta == meta_of(seed) && weights == pattern(weights.size(), static_cast<uint64_t>(seed));
}

}  // namespace lifeboat::checkpoint::testing
