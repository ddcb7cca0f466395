#include "checkpoint/file_io.hpp"

#include <fcntl.h>

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"

namespace lifeboat::checkpoint {
namespace {

using testing::exists;
using testing::read_file;
using testing::temp_dir;

file_system& posix() { return *posix_file_system(); }

TEST(file_io, durable_write_replaces_the_file_and_leaves_no_temp) {
  temp_dir dir;
  ASSERT_FALSE(write_file_durably(posix(), dir.path(), "a", "first"));
  ASSERT_FALSE(write_file_durably(posix(), dir.path(), "a", "second"));
  EXPECT_EQ(read_file(dir.sub("a")), "second");
  EXPECT_FALSE(exists(dir.sub("a.tmp")));
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
