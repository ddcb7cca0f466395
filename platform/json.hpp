#pragma once

#include <string>
#include <string_view>

#include <google/protobuf/message.h>
#include <caf/error.hpp>

#include "messages/errors.hpp"

namespace lifeboat {

/// Parses the JSON document `text` into `out` (fields it does not know are
/// ignored). The error (`code`) names `what` and the parser's complaint; `out`
/// is unspecified after an error.
caf::error parse_json(std::string_view text, google::protobuf::Message& out, std::string_view what,
                      errc code = errc::invalid_argument);

/// `message` as compact JSON, with the JSON names of its fields.
std::string to_json(const google::protobuf::Message& message);

}  // namespace lifeboat
