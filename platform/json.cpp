#include "platform/json.hpp"

#include <google/protobuf/util/json_util.h>

#include "messages/errors.hpp"

namespace lifeboat {

caf::error parse_json(std::string_view text, google::protobuf::Message& out, std::string_view what,
                      errc code) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece{text.data(), text.size()}, &out, options);
  if (status.ok()) return caf::none;
  return make_error(code, std::string{what} + ": bad JSON (" + std::string{status.message()} + ")");
}

std::string to_json(const google::protobuf::Message& message) {
  std::string out;
  // Serializing a well-formed message cannot fail; the status is only for
  // messages with unset required parts, which proto3 does not have.
  static_cast<void>(google::protobuf::util::MessageToJsonString(message, &out));
  return out;
}

}  // namespace lifeboat
