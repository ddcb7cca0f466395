#pragma once

#include <string>
#include <string_view>

namespace lifeboat {

// A protobuf `string` field must hold UTF-8: proto3 refuses to parse a
// message whose string is not (the coordination service then closes the
// connection as garbage; a checkpoint index no longer reads). Text that
// comes from outside lifeboat (an exception's message, a buffer's name) is
// checked or mended with these before it goes into one.

/// Whether `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no
/// surrogates, nothing above U+10FFFF), as protobuf checks it.
bool is_utf8(std::string_view text);

/// `text` with every byte that starts no well-formed sequence replaced by
/// U+FFFD; `text` itself when it is UTF-8.
std::string to_utf8(std::string_view text);

/// The longest prefix of UTF-8 `text` of at most `max_bytes` bytes that does
/// not cut a character.
std::string_view utf8_prefix(std::string_view text, size_t max_bytes);

}  // namespace lifeboat
