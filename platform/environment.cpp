#include "platform/environment.hpp"

#include <cstdlib>

namespace lifeboat {

env_lookup process_environment() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

const char* env_value(const env_lookup& env, const char* name) {
  const char* value = env(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

}  // namespace lifeboat
