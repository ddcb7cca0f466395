#pragma once

#include <functional>

namespace lifeboat {

/// Looks up one environment variable: nullptr when it is not set. Code that reads
/// the environment takes one of these, so tests hand it a table instead of
/// changing the process environment.
using env_lookup = std::function<const char*(const char*)>;

/// The process environment (std::getenv).
env_lookup process_environment();

/// The value of `name`, or nullptr when it is unset or empty: an empty variable
/// counts as absent everywhere lifeboat reads one.
const char* env_value(const env_lookup& env, const char* name);

}  // namespace lifeboat
