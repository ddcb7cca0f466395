#include "platform/timestamp.hpp"

#include <ctime>
#include <string>

#include "messages/errors.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat {

namespace {

constexpr int64_t kMsPerSecond = 1000;
constexpr int64_t kSecondsPerMinute = 60;
constexpr int kFractionDigits = 3;
// The largest value of two decimal digits (an offset's hours or minutes).
constexpr int64_t kMaxOffsetField = 99;

caf::error bad_time(std::string_view text, const char* expected) {
  return make_error(errc::invalid_argument,
                    "timestamp '" + std::string{text} + "': expected " + expected);
}

bool digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

caf::expected<int64_t> parse_iso8601_ms(std::string_view text) {
  constexpr const char* expected = "YYYY-MM-DDThh:mm:ss[.fff](Z|+hh:mm)";
  std::string copy{text};
  std::tm tm{};
  const char* rest = strptime(copy.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return bad_time(text, expected);
  std::string_view tail{rest};
  int64_t millis = 0;
  if (!tail.empty() && tail.front() == '.') {
    auto end = tail.find_first_not_of("0123456789", 1);
    auto fraction = tail.substr(1, end == std::string_view::npos ? tail.size() - 1 : end - 1);
    if (!digits(fraction)) return bad_time(text, expected);
    // Keep milliseconds; finer digits do not matter for a deadline.
    for (int i = 0; i < kFractionDigits; ++i)
      millis = millis * 10 + (i < static_cast<int>(fraction.size()) ? fraction[i] - '0' : 0);
    tail.remove_prefix(1 + fraction.size());
  }
  int64_t offset_seconds = 0;
  if (tail == "Z" || tail == "z") {
    offset_seconds = 0;
  } else if (tail.size() == 6 && (tail[0] == '+' || tail[0] == '-') && tail[3] == ':' &&
             digits(tail.substr(1, 2)) && digits(tail.substr(4, 2))) {
    // Two digits each, checked above: parse_integer cannot fail here, and
    // nothing from a metadata server goes through a throwing std::stoi.
    auto hours = parse_integer(tail.substr(1, 2), "timestamp offset hours", 0, kMaxOffsetField);
    auto minutes = parse_integer(tail.substr(4, 2), "timestamp offset minutes", 0, kMaxOffsetField);
    if (!hours || !minutes) return bad_time(text, expected);
    offset_seconds = (*hours * kSecondsPerMinute + *minutes) * kSecondsPerMinute;
    if (tail[0] == '-') offset_seconds = -offset_seconds;
  } else {
    return bad_time(text, expected);
  }
  // The local time in the text is UTC + offset, so UTC = local - offset.
  int64_t seconds = static_cast<int64_t>(timegm(&tm)) - offset_seconds;
  return seconds * kMsPerSecond + millis;
}

caf::expected<int64_t> parse_rfc1123_ms(std::string_view text) {
  std::string copy{text};
  std::tm tm{};
  const char* rest = strptime(copy.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (rest == nullptr || *rest != '\0')
    return bad_time(text, "an RFC 1123 date like 'Mon, 11 Apr 2022 22:26:58 GMT'");
  return static_cast<int64_t>(timegm(&tm)) * kMsPerSecond;
}

}  // namespace lifeboat
