#include "platform/text_parse.hpp"

#include <charconv>
#include <cstdio>

#include "messages/address.hpp"
#include "messages/errors.hpp"

namespace lifeboat {

namespace {

constexpr int64_t kMinPort = 1;
constexpr int64_t kMaxPort = 65535;

std::string quoted(std::string_view what, std::string_view text) {
  std::string out{what};
  out += "='";
  out += text;
  out += "'";
  return out;
}

}  // namespace

std::string endpoint::to_string() const { return host_port(host, port); }

caf::expected<int64_t> parse_integer(std::string_view text, std::string_view what, int64_t min,
                                     int64_t max) {
  auto expectation =
      ": expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec == std::errc::invalid_argument || end != text.data() + text.size())
    return make_error(errc::invalid_config, quoted(what, text) + expectation);
  if (ec == std::errc::result_out_of_range || value < min || value > max)
    return make_error(errc::invalid_config, quoted(what, text) + " is out of range" + expectation);
  return value;
}

caf::expected<int64_t> parse_seconds_as_ms(std::string_view text, std::string_view what,
                                           double max_seconds) {
  // %g: "604800", not std::to_string's "604800.000000".
  char bound[32];
  std::snprintf(bound, sizeof(bound), "%g", max_seconds);
  auto expectation = ": expected seconds in [0, " + std::string{bound} + "]";
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || !(value >= 0) ||
      value > max_seconds)
    return make_error(errc::invalid_config, quoted(what, text) + expectation);
  return static_cast<int64_t>(value * 1000.0);
}

caf::expected<uint16_t> parse_port(std::string_view text, std::string_view what) {
  auto value = parse_integer(text, what, kMinPort, kMaxPort);
  if (!value) return value.error();
  return static_cast<uint16_t>(*value);
}

caf::expected<endpoint> parse_endpoint(std::string_view text, std::string_view what,
                                       std::optional<uint16_t> default_port) {
  auto bad = [&](const char* why) {
    return make_error(errc::invalid_config,
                      quoted(what, text) + ": expected host:port (" + why + ")");
  };
  endpoint result;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    // Bracketed IPv6 literal: the colons inside belong to the address.
    auto close = text.find(']');
    if (close == std::string_view::npos) return bad("unclosed '['");
    result.host = std::string{text.substr(1, close - 1)};
    auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad("junk after ']'");
      port_text = rest.substr(1);
    }
  } else {
    auto colon = text.rfind(':');
    if (colon != std::string_view::npos && text.find(':') != colon)
      return bad("an IPv6 address needs brackets");
    result.host = std::string{text.substr(0, colon)};
    if (colon != std::string_view::npos)
      port_text = text.substr(colon + 1);
    else if (!default_port)
      return bad("no port");
  }
  if (result.host.empty()) return bad("empty host");
  if (port_text.empty() && !default_port) return bad("no port");
  if (port_text.empty()) {
    result.port = *default_port;
    return result;
  }
  // The whole text is named, not the port alone ("LIFEBOAT_COORDINATOR='0'").
  auto port = parse_port(port_text, what);
  if (!port) return bad("a port in [1, 65535]");
  result.port = *port;
  return result;
}

std::string without_brackets(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return std::string{host};
}

std::string_view trim(std::string_view text) {
  constexpr std::string_view space = " \t\r\n";
  auto first = text.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  auto last = text.find_last_not_of(space);
  return text.substr(first, last - first + 1);
}

}  // namespace lifeboat
