// The worker's memory tier as LIFEBOAT_LOCAL_DIR sets it (a directory, 'off',
// one that cannot be made), the spares allocated ahead of the next shard, and
// the status report of a checkpoint's tiers.
#include "runtime/checkpoint_tiers.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "messages/errors.hpp"

namespace lifeboat {
namespace {

namespace fs = std::filesystem;

// A checkpoint directory of a test's own, removed at the end.
class scratch_checkpoint_dir {
 public:
  explicit scratch_checkpoint_dir(const std::string& name)
      : path_(fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~scratch_checkpoint_dir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

TEST(checkpoint_tiers_test, local_dir_names_the_memory_tier) {
  auto dir = fs::temp_directory_path() / ("lifeboat-tiers-test-" + std::to_string(::getpid()));
  scratch_checkpoint_dir ckpt{"lifeboat-tiers-test-ckpt"};
  auto tier = open_worker_memory_tier(dir.string(), ckpt.str(), 1, 2);
  ASSERT_TRUE(tier && *tier);
  EXPECT_EQ((*tier)->path(), (dir / "rank-00001-of-00002").string());
  EXPECT_FALSE((*tier)->remove());
  EXPECT_FALSE(fs::exists(dir));
}

// One LIFEBOAT_LOCAL_DIR for every job of a user: a job of another checkpoint
// directory finds the first's tiers there and leaves them, without a memory
// tier of its own, instead of restoring them.
TEST(checkpoint_tiers_test, a_local_dir_holding_another_jobs_tiers_is_left_out_with_a_warning) {
  auto dir = fs::temp_directory_path() / ("lifeboat-tiers-shared-" + std::to_string(::getpid()));
  scratch_checkpoint_dir first{"lifeboat-tiers-first"};
  scratch_checkpoint_dir second{"lifeboat-tiers-second"};
  {
    auto tier = open_worker_memory_tier(dir.string(), first.str(), 0, 1);
    ASSERT_TRUE(tier && *tier);
  }
  ::testing::internal::CaptureStderr();
  auto other = open_worker_memory_tier(dir.string(), second.str(), 0, 1);
  auto log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(other);
  EXPECT_FALSE(*other);
  EXPECT_NE(log.find("no memory tier in " + dir.string() +
                     " (LIFEBOAT_LOCAL_DIR), checkpoints go "
                     "to the directory only: refused: " +
                     dir.string() + " holds the memory tier of another checkpoint directory, " +
                     first.str()),
            std::string::npos)
      << log;
  EXPECT_TRUE(fs::exists(dir / "rank-00000-of-00001"));
  auto again = open_worker_memory_tier(dir.string(), first.str(), 0, 1);
  ASSERT_TRUE(again && *again);
  EXPECT_FALSE((*again)->remove());
  EXPECT_FALSE(fs::exists(dir));
}

TEST(checkpoint_tiers_test, off_means_no_memory_tier) {
  auto tier = open_worker_memory_tier(std::string{checkpoint::memory_tier_off}, "unused", 0, 1);
  ASSERT_TRUE(tier);
  EXPECT_FALSE(*tier);
}

TEST(checkpoint_tiers_test, a_tier_that_cannot_be_made_is_left_out_with_a_warning) {
  ::testing::internal::CaptureStderr();
  scratch_checkpoint_dir ckpt{"lifeboat-tiers-test-ckpt"};
  auto tier = open_worker_memory_tier(std::string{"/proc/lifeboat-no-such-dir"}, ckpt.str(), 0, 1);
  auto log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(tier);
  EXPECT_FALSE(*tier);
  EXPECT_NE(log.find("no memory tier in /proc/lifeboat-no-such-dir (LIFEBOAT_LOCAL_DIR), "
                     "checkpoints go to the directory only"),
            std::string::npos)
      << log;
}

// A rank's own tier (rank 1 of 4) and the listener that keeps its replicas.
class checkpoint_tiers_spare_test : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "ckpt");
    auto memory = open_worker_memory_tier(dir_.string() + "/own", (dir_ / "ckpt").string(), 1, 4);
    ASSERT_TRUE(memory && *memory);
    memory_ = std::move(*memory);
    replica_server::config cfg;
    cfg.host = "127.0.0.1";
    cfg.token = token;
    cfg.dir = dir_.string() + "/holder";
    cfg.world_size = 4;
    cfg.holds = [](int source) { return source == 1; };
    auto started = replica_server::start(std::move(cfg));
    ASSERT_TRUE(started) << describe(started.error());
    peer_.server = std::move(*started);
    peer_.client.emplace("127.0.0.1", peer_.server->port(), token, 1, 4);
    ASSERT_FALSE(registry_.add_host_buffer("weights", weights_.data(), weights_.size()));
  }

  void TearDown() override { fs::remove_all(dir_); }

  std::string own_spare() const {
    return memory_->path() + "/" + checkpoint::memory_tier_spare_name;
  }
  std::string held_spare() const {
    return dir_.string() + "/holder/rank-00001-of-00004/" + checkpoint::memory_tier_spare_name;
  }

  static constexpr const char* token = "spare-test-token";
  fs::path dir_ =
      fs::temp_directory_path() / ("lifeboat-spares-test-" + std::to_string(::getpid()));
  std::optional<checkpoint::memory_tier> memory_;
  worker_peer_tier peer_;
  std::vector<char> weights_ = std::vector<char>(64 * 1024);
  checkpoint::state_registry registry_;  // weights_, registered
};

TEST_F(checkpoint_tiers_spare_test, the_next_shards_files_are_allocated_here_and_at_the_holder) {
  ::testing::internal::CaptureStderr();
  prepare_spares(&*memory_, peer_, registry_);
  auto log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(fs::file_size(own_spare()), weights_.size());
  EXPECT_EQ(fs::file_size(held_spare()), weights_.size());
  EXPECT_NE(log.find("65536 bytes allocated for the next shard here and at 127.0.0.1:"),
            std::string::npos)
      << log;
}

// Callback state has no size until it is saved: the spares have the
// buffers' size, and the save grows its own by the callbacks' bytes. Every
// lifeboat.torch job has such state (its optimizer's rates), and none got a
// spare while callbacks meant none.
TEST_F(checkpoint_tiers_spare_test, state_of_callbacks_leaves_the_spares_the_size_of_the_buffers) {
  ASSERT_FALSE(registry_.add_callbacks(
      "loader", [] { return std::string{"position"}; }, [](const std::string&) {}));
  prepare_spares(&*memory_, peer_, registry_);
  EXPECT_EQ(fs::file_size(own_spare()), weights_.size());
  EXPECT_EQ(fs::file_size(held_spare()), weights_.size());
}

// Each host's room is its own: no room here still leaves the holder's spare
// to be made, and a holder that is gone leaves this host's.
TEST_F(checkpoint_tiers_spare_test, no_room_here_still_makes_the_holders_spare) {
  auto full = checkpoint::memory_tier::open(dir_.string() + "/full", 1, 4, 1024);
  ASSERT_TRUE(full) << describe(full.error());
  ::testing::internal::CaptureStderr();
  prepare_spares(&*full, peer_, registry_);
  auto log = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(fs::exists(full->path() + "/" + checkpoint::memory_tier_spare_name));
  EXPECT_EQ(fs::file_size(held_spare()), weights_.size());
  EXPECT_NE(log.find("no spare of"), std::string::npos) << log;
  EXPECT_NE(log.find("bytes allocated for the next shard at 127.0.0.1:"), std::string::npos) << log;
}

TEST_F(checkpoint_tiers_spare_test, a_spare_the_holder_cannot_make_leaves_this_hosts_in_place) {
  peer_.server.reset();
  ::testing::internal::CaptureStderr();
  prepare_spares(&*memory_, peer_, registry_);
  auto log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(fs::file_size(own_spare()), weights_.size());
  EXPECT_NE(log.find("peer tier: no spare at the holder"), std::string::npos) << log;
  EXPECT_NE(log.find("bytes allocated for the next shard here in"), std::string::npos) << log;
}

// One job per checkpoint directory, also without a memory tier: rank 0
// locks the directory; the ranks of its own job take no lock, another job's
// rank 0 is refused while the lock is held, and gets it once it is gone.
TEST(checkpoint_tiers_test, rank_0_locks_the_checkpoint_directory_against_another_job) {
  scratch_checkpoint_dir dir{"lifeboat-tiers-lock"};
  auto first = lock_checkpoint_dir(dir.str(), 0);
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->has_value());
  auto same_job = lock_checkpoint_dir(dir.str(), 1);
  ASSERT_TRUE(same_job);
  EXPECT_FALSE(same_job->has_value());
  auto second = lock_checkpoint_dir(dir.str(), 0);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error(), make_error(errc::already_exists));
  EXPECT_NE(describe(second.error()).find("the rank 0 of another job holds it"), std::string::npos)
      << describe(second.error());
  first->reset();
  auto after = lock_checkpoint_dir(dir.str(), 0);
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->has_value());
}

// A checkpoint directory given as a link (ckpt -> /mnt/shared/job, a common
// set-up) is locked where it leads: before, the lock, which follows no link,
// failed ("Not a directory") and left it unlocked, and a job given the
// target's path ran beside one given the link.
TEST(checkpoint_tiers_test, a_directory_given_as_a_link_is_locked_where_it_leads) {
  scratch_checkpoint_dir dir{"lifeboat-tiers-link"};
  auto link = dir.str() + "-link";
  std::filesystem::create_directory_symlink(dir.str(), link);
  testing::internal::CaptureStderr();
  auto through_link = lock_checkpoint_dir(link, 0);
  auto log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(through_link) << describe(through_link.error());
  EXPECT_TRUE(through_link->has_value()) << log;
  auto direct = lock_checkpoint_dir(dir.str(), 0);
  EXPECT_FALSE(direct);
  through_link->reset();
  std::filesystem::remove(link);
}

TEST(checkpoint_tiers_test, a_directory_that_cannot_be_locked_is_left_unlocked_with_a_warning) {
  testing::internal::CaptureStderr();
  auto lock = lock_checkpoint_dir("/proc/lifeboat-no-such-dir", 0);
  auto log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(lock);
  EXPECT_FALSE(lock->has_value());
  EXPECT_NE(log.find("checkpoint directory /proc/lifeboat-no-such-dir not locked, a second job "
                     "on it would not be refused"),
            std::string::npos)
      << log;
}

TEST(checkpoint_tiers_test, the_report_lists_every_tier_with_its_seconds) {
  checkpoint::checkpoint_info info;
  info.step = 7;
  info.path = "/ckpt/step-000000000007";
  info.bytes = 1024;
  info.tiers = {{checkpoint::tier_memory, 0.25}, {checkpoint::tier_directory, 1.5}};
  auto report = checkpoint_report(info, 2.0);
  EXPECT_EQ(report.step(), 7);
  EXPECT_EQ(report.path(), info.path);
  EXPECT_EQ(report.bytes(), 1024);
  EXPECT_DOUBLE_EQ(report.seconds(), 2.0);
  ASSERT_EQ(report.tiers_size(), 2);
  EXPECT_EQ(report.tiers(0).name(), "memory");
  EXPECT_DOUBLE_EQ(report.tiers(0).seconds(), 0.25);
  EXPECT_EQ(report.tiers(1).name(), "directory");
}

// Seen: "/ckpt\xE9/step-..." showed in /status as "/ckptstep-...".
TEST(checkpoint_tiers_test, a_path_that_is_not_utf8_is_reported_mended) {
  checkpoint::checkpoint_info info;
  info.path = "/ckpt\xE9/step-000000000007";
  EXPECT_EQ(checkpoint_report(info, 1.0).path(), "/ckpt\xEF\xBF\xBD/step-000000000007");
}

}  // namespace
}  // namespace lifeboat
