#pragma once

#include <string>

#include <caf/expected.hpp>

#include "platform/notice_source.hpp"

namespace lifeboat {

/// A notice when `path` appears (spec "file:/path"), for schedulers and tests
/// that can touch a file. The file may hold a deadline as Unix seconds ("1700000000");
/// empty means unknown, anything else is logged and also taken as unknown.
/// An empty path is errc::invalid_config.
caf::expected<notice_source_ptr> make_file_source(const std::string& path);

}  // namespace lifeboat
