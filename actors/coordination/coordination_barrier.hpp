#pragma once

#include "checkpoint/barrier.hpp"

namespace lifeboat {

class coordination_client;

/// The checkpoint-ready barrier through the coordination service: always
/// available, used when the trainer hands lifeboat no NCCL communicator.
class coordination_barrier : public checkpoint::barrier {
 public:
  explicit coordination_barrier(coordination_client& client) : client_(client) {}

  caf::error arrive_and_wait(const std::string& name, std::chrono::milliseconds timeout) override;

 private:
  coordination_client& client_;
};

}  // namespace lifeboat
