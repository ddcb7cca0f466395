#include "actors/system_config.hpp"

#include <caf/io/middleman.hpp>

#include "messages/errors.hpp"

namespace lifeboat {

system_config::system_config() {
  load<caf::io::middleman>();
  add_error_category(error_category_atom::value,
                     [](uint8_t code, caf::atom_value, const caf::message& context) {
                       return describe(caf::error{code, error_category_atom::value, context});
                     });
  // Our actors never block their scheduler thread for long; sharing keeps the
  // round-trip latency of idle systems low (see NOTES-caf-0.17).
  set("scheduler.policy", caf::atom("sharing"));
  // One scheduler thread: with more, every enqueue wakes an idle one (a futex
  // and a thread switch) for work the sending thread would take next anyway.
  // Nothing here blocks a scheduler thread (sources poll on their own
  // threads, the writer's I/O has its own). Measured with handler_bench,
  // N = 16 on 2 cores: p50 8.4 ms with the default (4 threads), 6.2 ms with
  // 2, 4.7 to 5.6 ms with 1.
  set("scheduler.max-threads", size_t{1});
  set("logger.verbosity", caf::atom("quiet"));
}

}  // namespace lifeboat
