#pragma once

#include <chrono>
#include <string>

#include <caf/expected.hpp>

#include "platform/environment.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat {

/// The link-local address every cloud serves its metadata at.
constexpr char kLinkLocalMetadataHost[] = "169.254.169.254";
constexpr uint16_t kMetadataPort = 80;

/// The endpoint named by the first of `variables` that is set ("host" or
/// "host:port", port 80 by default), else `fallback_host`:80. A malformed value
/// is errc::invalid_config quoting the variable.
caf::expected<endpoint> metadata_endpoint(const env_lookup& env,
                                          std::initializer_list<const char*> variables,
                                          const std::string& fallback_host);

/// Time left until `deadline`, never negative.
std::chrono::milliseconds time_left(std::chrono::steady_clock::time_point deadline);

}  // namespace lifeboat
