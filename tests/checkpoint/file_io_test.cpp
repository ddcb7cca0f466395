#include "checkpoint/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"

namespace lifeboat::checkpoint {
namespace {

using testing::exists;
using testing::read_file;
using testing::temp_dir;

file_system& posix() { return *posix_file_system(); }

// A FIFO in a checkpoint file's place, with no writer: refused at once,
// where opening it for reading used to wait for a writer forever.
TEST(file_io, read_whole_file_refuses_what_is_not_a_regular_file_without_waiting) {
  temp_dir dir;
  ASSERT_EQ(::mkfifo(dir.sub("MANIFEST").c_str(), 0600), 0);
  auto read = read_whole_file(dir.sub("MANIFEST"));
  ASSERT_FALSE(read);
  EXPECT_EQ(describe(read.error()),
            "corrupt: corrupt file " + dir.sub("MANIFEST") + ": is not a regular file");
  read = read_whole_file(dir.path());
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error(), make_error(errc::corrupt));
}

TEST(file_io, durable_write_replaces_the_file_and_leaves_no_temp) {
  temp_dir dir;
  ASSERT_FALSE(write_file_durably(posix(), dir.path(), "a", "first"));
  ASSERT_FALSE(write_file_durably(posix(), dir.path(), "a", "second"));
  EXPECT_EQ(read_file(dir.sub("a")), "second");
  EXPECT_EQ(list_dir(dir.path()), std::vector<std::string>{"a"});
}

// The kernel's file system, but the first rename of a temporary file lets
// another writer of the same file run whole first: what two ranks of one
// host do when both write their job's record at once.
class interleaving_file_system : public file_system {
 public:
  interleaving_file_system(std::string dir, file_writers writers)
      : dir_(std::move(dir)), writers_(writers) {}

  int open(const std::string& path, int flags, mode_t mode) override {
    return posix().open(path, flags, mode);
  }
  ssize_t pwrite(int fd, const char* data, size_t size, off_t offset) override {
    return posix().pwrite(fd, data, size, offset);
  }
  int fsync(int fd) override { return posix().fsync(fd); }
  int rename(const std::string& from, const std::string& to) override {
    if (!interleaved_) {
      interleaved_ = true;
      other_error_ = write_file_durably(*this, dir_, "record", "the other writer's bytes",
                                        private_file_mode, writers_);
    }
    return posix().rename(from, to);
  }
  int mkdir(const std::string& path, mode_t mode) override { return posix().mkdir(path, mode); }
  int unlink(const std::string& path) override { return posix().unlink(path); }
  int fallocate(int fd, off_t length) override { return posix().fallocate(fd, length); }
  int ftruncate(int fd, off_t length) override { return posix().ftruncate(fd, length); }

  const caf::error& other_error() const { return other_error_; }

 private:
  std::string dir_;
  file_writers writers_;
  bool interleaved_ = false;
  caf::error other_error_;
};

TEST(file_io, several_writers_of_one_file_each_rename_a_whole_file_of_their_own) {
  temp_dir dir;
  interleaving_file_system fs{dir.path(), file_writers::several};
  auto err = write_file_durably(fs, dir.path(), "record", "this writer's bytes", private_file_mode,
                                file_writers::several);
  EXPECT_FALSE(err) << describe(err);
  EXPECT_FALSE(fs.other_error()) << describe(fs.other_error());
  // This writer renamed last.
  EXPECT_EQ(read_file(dir.sub("record")), "this writer's bytes");
  EXPECT_EQ(list_dir(dir.path()), std::vector<std::string>{"record"});
}

// What several writers sharing "record.tmp" would do: the second truncates
// and renames the first's file, whose rename then finds nothing.
TEST(file_io, one_writers_temporary_file_is_not_for_several) {
  temp_dir dir;
  interleaving_file_system fs{dir.path(), file_writers::one};
  auto err = write_file_durably(fs, dir.path(), "record", "this writer's bytes");
  EXPECT_EQ(describe(err),
            "io_error: rename " + dir.sub("record.tmp") + ": No such file or directory");
  EXPECT_EQ(read_file(dir.sub("record")), "the other writer's bytes");
}

TEST(file_io, errors_name_the_operation_the_path_and_the_reason) {
  temp_dir dir;
  auto fd = open_file(dir.sub("missing/x"), O_RDONLY);
  ASSERT_FALSE(fd);
  EXPECT_EQ(describe(fd.error()),
            "io_error: open " + dir.sub("missing/x") + ": No such file or directory");
}

TEST(file_io, corruption_names_the_file_and_what_is_wrong) {
  auto err = corrupt_file("/ckpt/step-7/shard-0.data", "checksum mismatch in chunk 2");
  EXPECT_EQ(describe(err),
            "corrupt: corrupt file /ckpt/step-7/shard-0.data: checksum mismatch in chunk 2");
}

TEST(file_io, make_dir_refuses_a_regular_file) {
  temp_dir dir;
  testing::write_file(dir.sub("f"), "x");
  auto err = make_dir_durable(posix(), dir.sub("f"));
  ASSERT_TRUE(err);
  EXPECT_NE(describe(err).find("Not a directory"), std::string::npos);
}

TEST(file_io, preadv_fills_several_destinations_and_reports_truncation) {
  temp_dir dir;
  testing::write_file(dir.sub("f"), "abcdefgh");
  auto fd = open_file(dir.sub("f"), O_RDONLY);
  ASSERT_TRUE(fd);
  char a[3], b[5];
  ASSERT_FALSE(preadv_all(fd->get(), {{a, 3}, {b, 5}}, 0, dir.sub("f")));
  EXPECT_EQ(std::string(a, 3), "abc");
  EXPECT_EQ(std::string(b, 5), "defgh");
  auto err = preadv_all(fd->get(), {{b, 5}}, 5, dir.sub("f"));
  EXPECT_EQ(err, make_error(errc::corrupt));
}

TEST(file_io, remove_tree_and_list_dir) {
  temp_dir dir;
  ASSERT_FALSE(make_dir_durable(posix(), dir.sub("d")));
  ASSERT_FALSE(make_dir_durable(posix(), dir.sub("d/e")));
  testing::write_file(dir.sub("d/e/f"), "x");
  auto names = list_dir(dir.path());
  ASSERT_TRUE(names);
  EXPECT_EQ(*names, std::vector<std::string>{"d"});
  ASSERT_FALSE(remove_tree(dir.sub("d")));
  EXPECT_FALSE(exists(dir.sub("d")));
  EXPECT_FALSE(remove_tree(dir.sub("d")));
}

TEST(file_io, file_size_is_the_files_or_an_error_naming_it) {
  temp_dir dir;
  testing::write_file(dir.sub("f"), "12345");
  auto size = file_size(dir.sub("f"));
  ASSERT_TRUE(size);
  EXPECT_EQ(*size, 5u);
  auto absent = file_size(dir.sub("absent"));
  ASSERT_FALSE(absent);
  EXPECT_NE(describe(absent.error()).find(dir.sub("absent")), std::string::npos);
}

// A file written over from its start must end with what was written: a
// longer one (a larger spare) is an error naming both sizes.
TEST(file_io, a_file_written_over_must_end_with_what_was_written) {
  temp_dir dir;
  testing::write_file(dir.sub("f"), "0123456789");
  auto fd = open_file(dir.sub("f"), O_WRONLY);
  ASSERT_TRUE(fd);
  EXPECT_FALSE(check_written_size(fd->get(), 10, dir.sub("f")));
  auto longer = check_written_size(fd->get(), 4, dir.sub("f"));
  ASSERT_TRUE(longer);
  EXPECT_NE(describe(longer).find("has 10 bytes, not the 4 written"), std::string::npos)
      << describe(longer);
}

}  // namespace
}  // namespace lifeboat::checkpoint
