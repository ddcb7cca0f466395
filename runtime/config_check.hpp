#pragma once

#include <caf/error.hpp>

#include "lifeboat/termination_config.hpp"

namespace lifeboat {

/// Checks a termination_config before anything is started or written; the
/// error says which field is wrong and what is expected.
caf::error check_config(const termination_config& config);

}  // namespace lifeboat
