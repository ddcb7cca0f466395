// The kernel's file system behind the checkpoint's seam: each call acts on
// the disk and reports a failure as -1 with errno, as its POSIX namesake.
#include "checkpoint/file_system.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include "tests/checkpoint/test_support.hpp"

namespace lifeboat::checkpoint {
namespace {

using testing::exists;
using testing::read_file;
using testing::temp_dir;

TEST(posix_file_system, writes_syncs_renames_and_removes_on_the_disk) {
  temp_dir dir;
  auto& fs = *posix_file_system();
  ASSERT_EQ(fs.mkdir(dir.sub("d"), 0700), 0);
  auto fd = fs.open(dir.sub("d/a"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  const std::string bytes = "checkpoint";
  EXPECT_EQ(fs.pwrite(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  EXPECT_EQ(fs.pwrite(fd, "C", 1, 0), 1);
  EXPECT_EQ(fs.fsync(fd), 0);
  ::close(fd);
  ASSERT_EQ(fs.rename(dir.sub("d/a"), dir.sub("d/b")), 0);
  EXPECT_FALSE(exists(dir.sub("d/a")));
  EXPECT_EQ(read_file(dir.sub("d/b")), "Checkpoint");
  ASSERT_EQ(fs.unlink(dir.sub("d/b")), 0);
  EXPECT_FALSE(exists(dir.sub("d/b")));
}

TEST(posix_file_system, failures_are_minus_one_with_errno) {
  temp_dir dir;
  auto& fs = *posix_file_system();
  errno = 0;
  EXPECT_EQ(fs.open(dir.sub("missing/a"), O_RDONLY | O_CLOEXEC, 0), -1);
  EXPECT_EQ(errno, ENOENT);
  ASSERT_EQ(fs.mkdir(dir.sub("d"), 0700), 0);
  EXPECT_EQ(fs.mkdir(dir.sub("d"), 0700), -1);
  EXPECT_EQ(errno, EEXIST);
  EXPECT_EQ(fs.rename(dir.sub("missing"), dir.sub("other")), -1);
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(fs.unlink(dir.sub("missing")), -1);
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(fs.fsync(-1), -1);
  EXPECT_EQ(errno, EBADF);
}

}  // namespace
}  // namespace lifeboat::checkpoint
