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
  set("logger.verbosity", caf::atom("quiet"));
}

}  // namespace lifeboat
