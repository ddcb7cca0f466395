#pragma once

#include <cstdint>
#include <string_view>

#include <caf/expected.hpp>

namespace lifeboat {

/// "2017-09-18T08:22:00Z" (AWS), with optional fractional seconds and a "Z" or
/// "+hh:mm"/"-hh:mm" offset, as Unix milliseconds.
caf::expected<int64_t> parse_iso8601_ms(std::string_view text);

/// "Mon, 11 Apr 2022 22:26:58 GMT" (Azure's NotBefore, HTTP dates) as Unix milliseconds.
caf::expected<int64_t> parse_rfc1123_ms(std::string_view text);

}  // namespace lifeboat
