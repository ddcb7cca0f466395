#pragma once

#include <caf/actor_system_config.hpp>

namespace lifeboat {

/// The name CAF 0.17 gives both the middleman's I/O thread, where every
/// worker's agent, cluster watcher and step resolver run (and rank 0's
/// coordination service), and its scheduler's worker thread; /proc cannot
/// tell them apart. The tests and handler_bench look threads up by it.
constexpr const char* caf_thread_name = "caf.multiplexer";

/// The CAF configuration every lifeboat process uses: the `lifeboat` error
/// category renders readably, and the I/O module (brokers) is loaded.
class system_config : public caf::actor_system_config {
 public:
  system_config();
};

}  // namespace lifeboat
