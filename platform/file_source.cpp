#include "platform/file_source.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat {

namespace {

constexpr char kComponent[] = "file_source";
constexpr int64_t kMsPerSecond = 1000;
constexpr int64_t kMaxUnixSeconds = std::numeric_limits<int64_t>::max() / kMsPerSecond;

class file_source : public notice_source {
 public:
  explicit file_source(std::string path) : path_(std::move(path)) {}

  std::string name() const override { return "file:" + path_; }

  caf::expected<std::optional<notice>> poll(std::chrono::milliseconds) override {
    if (seen_) return seen_;
    struct stat info {};
    if (::stat(path_.c_str(), &info) != 0) {
      if (errno == ENOENT) return std::optional<notice>{};
      return make_error(errc::io_error, "stat '" + path_ + "': " + std::strerror(errno));
    }
    seen_ = notice{name(), "trigger file " + path_ + " appeared", read_deadline()};
    log(log_level::info, kComponent, "termination notice: ", seen_->reason);
    return seen_;
  }

 private:
  // The deadline the file announces, or 0 (unknown).
  int64_t read_deadline() const {
    std::ifstream in{path_};
    std::string content{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
    auto text = trim(content);
    if (text.empty()) return 0;
    auto seconds = parse_integer(text, name(), 0, kMaxUnixSeconds);
    if (!seconds) {
      log(log_level::warning, kComponent, describe(seconds.error()),
          "; expected Unix seconds, taking the deadline as unknown");
      return 0;
    }
    return *seconds * kMsPerSecond;
  }

  std::string path_;
  std::optional<notice> seen_;
};

}  // namespace

caf::expected<notice_source_ptr> make_file_source(const std::string& path) {
  if (path.empty()) return make_error(errc::invalid_config, "notice source 'file:' needs a path");
  return std::make_unique<file_source>(path);
}

}  // namespace lifeboat
