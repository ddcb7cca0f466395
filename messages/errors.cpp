#include "messages/errors.hpp"

#include <caf/make_message.hpp>
#include <caf/message.hpp>

namespace lifeboat {

const char* to_string(errc x) {
  switch (x) {
    case errc::ok:
      return "ok";
    case errc::already_exists:
      return "already_exists";
    case errc::not_found:
      return "not_found";
    case errc::timeout:
      return "timeout";
    case errc::cancelled:
      return "cancelled";
    case errc::refused:
      return "refused";
    case errc::version_mismatch:
      return "version_mismatch";
    case errc::peer_error:
      return "peer_error";
    case errc::peer_lost:
      return "peer_lost";
    case errc::corrupt:
      return "corrupt";
    case errc::io_error:
      return "io_error";
    case errc::invalid_config:
      return "invalid_config";
    case errc::invalid_argument:
      return "invalid_argument";
    case errc::unavailable:
      return "unavailable";
    case errc::shutting_down:
      return "shutting_down";
    case errc::hung:
      return "hung";
  }
  return "unknown";
}

caf::error make_error(errc x) {
  return caf::error{static_cast<uint8_t>(x), error_category_atom::value};
}

caf::error make_error(errc x, std::string context) {
  return caf::error{static_cast<uint8_t>(x), error_category_atom::value,
                    caf::make_message(std::move(context))};
}

std::string describe(const caf::error& err) {
  if (!err) return "ok";
  if (err.category() != error_category_atom::value) return caf::to_string(err);
  std::string out = to_string(static_cast<errc>(err.code()));
  if (!err.context().empty() && err.context().match_elements<std::string>()) {
    out += ": ";
    out += err.context().get_as<std::string>(0);
  }
  return out;
}

caf::error wrap_error(errc x, const std::string& context, const caf::error& inner) {
  bool same_code =
      inner.category() == error_category_atom::value && inner.code() == static_cast<uint8_t>(x);
  if (same_code && inner.context().match_elements<std::string>())
    return make_error(x, context + ": " + inner.context().get_as<std::string>(0));
  return make_error(x, context + ": " + describe(inner));
}

}  // namespace lifeboat
