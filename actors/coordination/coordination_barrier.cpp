#include "actors/coordination/coordination_barrier.hpp"

#include "actors/coordination/coordination_client.hpp"

namespace lifeboat {

caf::error coordination_barrier::arrive_and_wait(const std::string& name,
                                                 std::chrono::milliseconds timeout) {
  return client_.barrier("lifeboat/checkpoint/" + name, timeout);
}

}  // namespace lifeboat
