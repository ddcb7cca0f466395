#pragma once

#include <caf/actor_system_config.hpp>

namespace lifeboat {

/// The CAF configuration every lifeboat process uses: the `lifeboat` error
/// category renders readably, and the I/O module (brokers) is loaded.
class system_config : public caf::actor_system_config {
 public:
  system_config();
};

}  // namespace lifeboat
