// Disk full, permission denied and a read-only directory: a clear error
// (errc::io_error with the path and the reason) and the previous checkpoint intact.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "checkpoint/store.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/checkpoint/worker_state.hpp"

namespace lifeboat::checkpoint {
namespace {

using testing::run_in_child;
using testing::worker_state;

constexpr std::size_t state_bytes = 1 << 20;
constexpr rlim_t file_size_limit = 64 * 1024;
constexpr uid_t nobody = 65534;

// Root ignores permission bits, so as root the child becomes "nobody" first.
bool drop_privileges() {
  if (::geteuid() != 0) return true;
  return ::setgid(nobody) == 0 && ::setuid(nobody) == 0;
}

class store_failure_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto st = store::open({dir_.path(), 0, 1});
    ASSERT_TRUE(st);
    state_.set(1);
    auto snap = st->take_snapshot(state_.registry);
    ASSERT_TRUE(snap && st->write_shard(*snap, 1));
    ASSERT_FALSE(st->commit(1, 1));
  }

  // Step 2 saved by a child under `prepare`; returns what the save said.
  testing::child_result save_in_child(const std::function<bool()>& prepare) {
    return run_in_child([&]() -> std::string {
      if (!prepare()) return "cannot prepare the child";
      auto st = store::open({dir_.path(), 0, 1});
      if (!st) return describe(st.error());
      state_.set(2);
      auto snap = st->take_snapshot(state_.registry);
      if (!snap) return describe(snap.error());
      auto info = st->write_shard(*snap, 2);
      if (!info) return describe(info.error());
      return describe(st->commit(2, 2));
    });
  }

  void expect_previous_intact() {
    auto st = store::open({dir_.path(), 0, 1});
    ASSERT_TRUE(st);
    worker_state fresh{state_bytes};
    auto restored = st->restore_latest(fresh.registry);
    ASSERT_TRUE(restored && *restored);
    EXPECT_EQ((*restored)->step, 1);
    EXPECT_TRUE(fresh.holds(1));
  }

  testing::temp_dir dir_;
  worker_state state_{state_bytes};
};

TEST_F(store_failure_test, disk_full) {
  // RLIMIT_FSIZE makes writes past the limit fail with EFBIG, as a full disk would.
  auto result = save_in_child([] {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{file_size_limit, file_size_limit};
    return ::setrlimit(RLIMIT_FSIZE, &limit) == 0;
  });
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.text.find("io_error: write " + dir_.path()), std::string::npos) << result.text;
  EXPECT_NE(result.text.find(".data.tmp: File too large"), std::string::npos) << result.text;
  expect_previous_intact();
}

TEST_F(store_failure_test, permission_denied_on_open) {
  auto result = run_in_child([&]() -> std::string {
    if (!drop_privileges()) return "cannot drop privileges";
    ::chmod(dir_.path().c_str(), 0555);
    auto st = store::open({dir_.path(), 0, 1});
    return st ? "opened" : describe(st.error());
  });
  if (result.text == "cannot drop privileges") GTEST_SKIP() << "setuid is not permitted here";
  EXPECT_NE(result.text.find("unusable checkpoint directory"), std::string::npos) << result.text;
  EXPECT_NE(result.text.find("Permission denied"), std::string::npos) << result.text;
  EXPECT_NE(result.text.find(dir_.path()), std::string::npos) << result.text;
  expect_previous_intact();
}

TEST_F(store_failure_test, directory_made_read_only_before_the_save) {
  // The store opens fine; the directory turns read-only before the shard is written.
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(dir_.path().c_str(), nobody, nobody), 0);
  }
  auto result = run_in_child([&]() -> std::string {
    if (!drop_privileges()) return "cannot drop privileges";
    auto st = store::open({dir_.path(), 0, 1});
    if (!st) return describe(st.error());
    if (::chmod(dir_.path().c_str(), 0555) != 0) return "cannot chmod";
    state_.set(2);
    auto snap = st->take_snapshot(state_.registry);
    if (!snap) return describe(snap.error());
    auto info = st->write_shard(*snap, 2);
    return info ? "saved" : describe(info.error());
  });
  ::chmod(dir_.path().c_str(), 0755);
  if (result.text == "cannot drop privileges") GTEST_SKIP() << "setuid is not permitted here";
  EXPECT_EQ(result.text,
            "io_error: mkdir " + dir_.sub("step-000000000002") + ": Permission denied");
  expect_previous_intact();
}

TEST_F(store_failure_test, a_directory_under_a_regular_file) {
  testing::write_file(dir_.sub("file"), "x");
  auto st = store::open({dir_.sub("file/checkpoints"), 0, 1});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error(), make_error(errc::io_error));
  EXPECT_NE(
      describe(st.error()).find("mkdir " + dir_.sub("file/checkpoints") + ": Not a directory"),
      std::string::npos)
      << describe(st.error());
}

}  // namespace
}  // namespace lifeboat::checkpoint
