// The lock a memory tier holds on its directory: exclusive within a process
// and across processes, released by its end (however it ends), and not kept
// by a child forked from the holder.
#include "checkpoint/directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include "messages/errors.hpp"
#include "test_support.hpp"

namespace lifeboat::checkpoint {
namespace {

using testing::temp_dir;

// A forked child that runs `body` once its parent writes a byte, then tells
// the parent (one byte back) and waits for a second byte before it ends: the
// parent looks at the lock while the child lives.
class forked_child {
 public:
  template <class Body>
  explicit forked_child(Body body) {
    if (::pipe(to_child_) != 0 || ::pipe(to_parent_) != 0) ADD_FAILURE() << "pipe";
    pid_ = ::fork();
    if (pid_ == 0) {
      char byte = body() ? 'y' : 'n';
      if (::write(to_parent_[1], &byte, 1) != 1) ::_exit(2);
      ::read(to_child_[0], &byte, 1);
      ::_exit(0);
    }
  }

  // What the child's body returned.
  bool result() {
    char byte = 0;
    return ::read(to_parent_[0], &byte, 1) == 1 && byte == 'y';
  }

  ~forked_child() {
    char byte = 'x';
    if (::write(to_child_[1], &byte, 1) != 1) ADD_FAILURE() << "write";
    int status = 0;
    ::waitpid(pid_, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int fd : {to_child_[0], to_child_[1], to_parent_[0], to_parent_[1]}) ::close(fd);
  }

 private:
  int to_child_[2] = {-1, -1};
  int to_parent_[2] = {-1, -1};
  pid_t pid_ = -1;
};

TEST(directory_lock_test, a_second_lock_waits_for_the_first_to_go) {
  temp_dir dir;
  std::optional<directory_lock> first;
  {
    auto held = directory_lock::acquire(dir.path());
    ASSERT_TRUE(held) << describe(held.error());
    first.emplace(std::move(*held));
  }
  auto second = directory_lock::acquire(dir.path());
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error(), make_error(errc::already_exists)) << describe(second.error());
  first.reset();
  EXPECT_TRUE(directory_lock::acquire(dir.path()));
}

TEST(directory_lock_test, a_moved_lock_is_held_by_its_new_owner_only) {
  temp_dir dir;
  std::filesystem::create_directory(dir.sub("a"));
  std::filesystem::create_directory(dir.sub("b"));
  auto a = directory_lock::acquire(dir.sub("a"));
  auto b = directory_lock::acquire(dir.sub("b"));
  ASSERT_TRUE(a && b);
  {
    directory_lock moved{std::move(*a)};
    EXPECT_FALSE(directory_lock::acquire(dir.sub("a")));
  }
  // The moved-from lock holds nothing, and its end releases nothing.
  EXPECT_TRUE(directory_lock::acquire(dir.sub("a")));
  auto again = directory_lock::acquire(dir.sub("a"));
  ASSERT_TRUE(again);
  // Assigning releases what the target held and takes over the other.
  *again = std::move(*b);
  EXPECT_TRUE(directory_lock::acquire(dir.sub("a")));
  EXPECT_FALSE(directory_lock::acquire(dir.sub("b")));
}

TEST(directory_lock_test, another_process_holding_it_is_told) {
  temp_dir dir;
  std::optional<directory_lock> childs;
  forked_child child{[&] {
    auto held = directory_lock::acquire(dir.path());
    if (held) childs.emplace(std::move(*held));
    return static_cast<bool>(held);
  }};
  ASSERT_TRUE(child.result());
  auto mine = directory_lock::acquire(dir.path());
  ASSERT_FALSE(mine);
  EXPECT_EQ(mine.error(), make_error(errc::already_exists));
}

// A DataLoader's worker processes are forked from the training process and
// may outlive it by seconds: they must not hold the lock against its restart.
TEST(directory_lock_test, a_forked_child_does_not_keep_the_lock) {
  temp_dir dir;
  std::optional<directory_lock> mine;
  {
    auto held = directory_lock::acquire(dir.path());
    ASSERT_TRUE(held);
    mine.emplace(std::move(*held));
  }
  forked_child child{[] { return true; }};
  ASSERT_TRUE(child.result());
  mine.reset();
  auto again = directory_lock::acquire(dir.path());
  EXPECT_TRUE(again) << describe(again.error());
}

// Two workers starting at once probe the same directories. Seen: with each
// probe an exclusive lock released at once, one worker took the other's
// probe for a holder and refused to start ("a job of 4 workers that is
// running", after that job had exited).
TEST(directory_lock_test, a_probe_sees_a_holder_and_not_another_probe) {
  temp_dir dir;
  EXPECT_FALSE(directory_lock::is_held(dir.path()));
  {
    auto mine = directory_lock::acquire(dir.path());
    ASSERT_TRUE(mine);
    EXPECT_TRUE(directory_lock::is_held(dir.path()));
    forked_child child{[&] { return directory_lock::is_held(dir.path()); }};
    EXPECT_TRUE(child.result());
  }
  EXPECT_FALSE(directory_lock::is_held(dir.path()));
  // Another probe in flight holds what is_held takes: a shared lock.
  int probe = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(probe, 0);
  ASSERT_EQ(::flock(probe, LOCK_SH | LOCK_NB), 0);
  EXPECT_FALSE(directory_lock::is_held(dir.path()));
  // An acquire meanwhile fails, as the header says: its caller tries again.
  auto during = directory_lock::acquire(dir.path());
  ASSERT_FALSE(during);
  EXPECT_EQ(during.error(), make_error(errc::already_exists));
  ::close(probe);
  EXPECT_TRUE(directory_lock::acquire(dir.path()));
  EXPECT_FALSE(directory_lock::is_held(dir.sub("none")));
}

TEST(directory_lock_test, no_directory_or_a_link_is_an_io_error) {
  temp_dir dir;
  auto none = directory_lock::acquire(dir.sub("none"));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error(), make_error(errc::io_error));
  std::filesystem::create_directory(dir.sub("real"));
  std::filesystem::create_directory_symlink(dir.sub("real"), dir.sub("link"));
  auto link = directory_lock::acquire(dir.sub("link"));
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error(), make_error(errc::io_error));
}

}  // namespace
}  // namespace lifeboat::checkpoint
