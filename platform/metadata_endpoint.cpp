#include "platform/metadata_endpoint.hpp"

namespace lifeboat {

caf::expected<endpoint> metadata_endpoint(const env_lookup& env,
                                          std::initializer_list<const char*> variables,
                                          const std::string& fallback_host) {
  for (auto* variable : variables)
    if (auto* value = env_value(env, variable))
      return parse_endpoint(value, variable, kMetadataPort);
  return endpoint{fallback_host, kMetadataPort};
}

std::chrono::milliseconds time_left(std::chrono::steady_clock::time_point deadline) {
  using namespace std::chrono;
  auto left = duration_cast<milliseconds>(deadline - steady_clock::now());
  return left.count() > 0 ? left : milliseconds{0};
}

}  // namespace lifeboat
