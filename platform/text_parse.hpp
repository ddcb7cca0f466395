#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <caf/expected.hpp>

namespace lifeboat {

/// A host and a TCP port, as "host:port" in configuration.
struct endpoint {
  std::string host;
  uint16_t port = 0;

  /// "host:port", with brackets around an IPv6 address.
  std::string to_string() const;
};

/// The whole of `text` as a decimal integer in [min, max]. The error
/// (errc::invalid_config) quotes `what` and `text` and says what was expected.
caf::expected<int64_t> parse_integer(std::string_view text, std::string_view what, int64_t min,
                                     int64_t max);

/// The whole of `text` as a decimal number of seconds in [0, max_seconds]
/// ("2", "0.5"), in milliseconds; errors as parse_integer's.
caf::expected<int64_t> parse_seconds_as_ms(std::string_view text, std::string_view what,
                                           double max_seconds);

/// A TCP port, 1..65535.
caf::expected<uint16_t> parse_port(std::string_view text, std::string_view what);

/// "host:port", "[v6addr]:port", or a bare host when `default_port` is given.
caf::expected<endpoint> parse_endpoint(std::string_view text, std::string_view what,
                                       std::optional<uint16_t> default_port = std::nullopt);

/// An address as a flag may give it: an IPv6 address in brackets ("[::1]")
/// without them, anything else as it is.
std::string without_brackets(std::string_view host);

/// `text` without leading and trailing white space.
std::string_view trim(std::string_view text);

}  // namespace lifeboat
