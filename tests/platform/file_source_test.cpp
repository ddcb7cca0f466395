#include "platform/file_source.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "messages/errors.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;

class file_source_test : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/lifeboat-file-source-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    path_ = dir_ + "/notice";
  }
  void TearDown() override {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  void write_trigger(const std::string& content) {
    int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
    ASSERT_EQ(::fsync(fd), 0);
    ::close(fd);
  }
  std::string dir_;
  std::string path_;
};

TEST_F(file_source_test, absent_file_is_no_notice_and_appearance_is_one) {
  auto source = make_file_source(path_);
  ASSERT_TRUE(source);
  EXPECT_EQ((*source)->name(), "file:" + path_);
  auto before = (*source)->poll(0ms);
  ASSERT_TRUE(before);
  EXPECT_FALSE(*before);
  write_trigger("");
  auto after = (*source)->poll(0ms);
  ASSERT_TRUE(after);
  ASSERT_TRUE(*after);
  EXPECT_EQ((*after)->deadline_unix_ms, 0);
  ::unlink(path_.c_str());
  auto still = (*source)->poll(0ms);
  ASSERT_TRUE(still && *still) << "a notice once seen stays";
}

TEST_F(file_source_test, content_is_a_deadline_in_unix_seconds) {
  write_trigger("1700000000\n");
  auto source = make_file_source(path_);
  auto polled = (*source)->poll(0ms);
  ASSERT_TRUE(polled && *polled);
  EXPECT_EQ((*polled)->deadline_unix_ms, 1'700'000'000'000);
}

TEST_F(file_source_test, other_content_means_unknown_deadline) {
  write_trigger("soon");
  auto source = make_file_source(path_);
  auto polled = (*source)->poll(0ms);
  ASSERT_TRUE(polled && *polled);
  EXPECT_EQ((*polled)->deadline_unix_ms, 0);
}

TEST(file_source, empty_path_is_invalid_config) {
  auto source = make_file_source("");
  ASSERT_FALSE(source);
  EXPECT_EQ(source.error(), make_error(errc::invalid_config));
}

}  // namespace
}  // namespace lifeboat
