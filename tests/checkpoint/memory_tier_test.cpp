// The memory tier of one rank: a save commits there, retention keeps the
// newest two and fewer when the bound leaves no room, a shard that does not
// fit at all is refused with the sizes, a crash leftover goes at open, and
// remove() leaves nothing behind; a checkpoint directory made again gets a
// memory directory of its own.
#include "checkpoint/memory_tier.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "checkpoint/layout.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/faulty_file_system.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/checkpoint/worker_state.hpp"

namespace lifeboat::checkpoint {
namespace {

using testing::worker_state;

constexpr std::size_t state_bytes = 256 * 1024;
constexpr int rank = 2;
constexpr int world_size = 4;

class memory_tier_test : public ::testing::Test {
 protected:
  memory_tier open(uint64_t max_bytes = memory_tier::unbounded) {
    auto tier = memory_tier::open(dir_.sub("job"), rank, world_size, max_bytes);
    EXPECT_TRUE(tier) << describe(tier.error());
    return std::move(*tier);
  }

  caf::expected<checkpoint_info> save(memory_tier& tier, int64_t step) {
    state_.set(step);
    auto snap = take_snapshot(state_.registry, *pool_);
    EXPECT_TRUE(snap);
    return tier.save(*snap, step, step * 10);
  }

  // The data bytes of the snapshot of `step` (its callback state's size
  // depends on it).
  uint64_t shard_bytes(int64_t step) {
    state_.set(step);
    auto snap = take_snapshot(state_.registry, *pool_);
    EXPECT_TRUE(snap);
    return snap ? snap->size() : 0;
  }

  // Whether `step` restores from `tier` into fresh buffers, bit-exact.
  static ::testing::AssertionResult restores(memory_tier& tier, int64_t step) {
    worker_state fresh{state_bytes};
    bool touched = false;
    auto restored = tier.restore_step(step, fresh.registry, touched);
    if (!restored) return ::testing::AssertionFailure() << describe(restored.error());
    if (!fresh.holds(step))
      return ::testing::AssertionFailure() << "not the bytes of step " << step;
    return ::testing::AssertionSuccess();
  }

  // A LIFEBOAT_LOCAL_DIR (not made yet) and two checkpoint directories.
  struct local_dirs {
    std::string local;
    std::string first;
    std::string second;
  };
  local_dirs make_local_dirs() {
    local_dirs out{dir_.sub("local"), dir_.sub("first"), dir_.sub("second")};
    std::filesystem::create_directories(out.first);
    std::filesystem::create_directories(out.second);
    return out;
  }

  // Whether `local` is claimed for `checkpoint_dir`, and a tier opened there
  // holds no checkpoint: a fresh start.
  static ::testing::AssertionResult starts_fresh(const std::string& local,
                                                 const std::string& checkpoint_dir) {
    if (auto err = claim_local_memory_dir(local, checkpoint_dir))
      return ::testing::AssertionFailure() << describe(err);
    auto tier = memory_tier::open(local, rank, world_size);
    if (!tier) return ::testing::AssertionFailure() << describe(tier.error());
    if (auto step = tier->newest_step(std::nullopt))
      return ::testing::AssertionFailure() << "the tier holds step " << *step;
    return ::testing::AssertionSuccess();
  }

  static ino_t inode_of(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st.st_ino;
  }

  testing::temp_dir dir_;
  worker_state state_{state_bytes};
  std::shared_ptr<staging_pool> pool_ = staging_pool::make();
};

TEST_F(memory_tier_test, a_save_is_committed_in_a_directory_of_the_rank) {
  auto tier = open();
  EXPECT_EQ(tier.path(), dir_.sub("job") + "/rank-00002-of-00004");
  auto info = save(tier, 5);
  ASSERT_TRUE(info) << describe(info.error());
  ASSERT_EQ(info->tiers.size(), 1u);
  EXPECT_EQ(info->tiers[0].name, tier_memory);
  EXPECT_TRUE(testing::exists(tier.path() + "/" + step_dir_name(5) + "/" + manifest_file_name));
  EXPECT_EQ(tier.newest_step(std::nullopt), 5);
  worker_state fresh{state_bytes};
  bool touched = false;
  auto restored = tier.restore_step(5, fresh.registry, touched);
  ASSERT_TRUE(restored) << describe(restored.error());
  EXPECT_EQ(restored->total_run_calls, 50);
  EXPECT_TRUE(fresh.holds(5));
}

TEST_F(memory_tier_test, keeps_the_newest_two) {
  auto tier = open();
  for (int64_t step : {1, 2, 3}) ASSERT_TRUE(save(tier, step));
  EXPECT_EQ(tier.newest_step(std::nullopt), 3);
  EXPECT_EQ(tier.newest_step(2), 2);
  EXPECT_EQ(tier.newest_step(1), std::nullopt);
}

TEST_F(memory_tier_test, keeps_only_the_newest_when_two_do_not_fit) {
  // Room for one shard and its allowance, not for two.
  auto tier = open(uint64_t{3} << 19);
  ASSERT_TRUE(save(tier, 1));
  ASSERT_TRUE(save(tier, 2));
  EXPECT_EQ(tier.newest_step(std::nullopt), 2);
  EXPECT_EQ(tier.newest_step(1), std::nullopt);
}

TEST_F(memory_tier_test, a_shard_that_does_not_fit_is_refused_with_the_sizes) {
  auto tier = open(state_bytes);
  auto info = save(tier, 1);
  ASSERT_FALSE(info);
  auto text = describe(info.error());
  EXPECT_NE(text.find("does not fit in the memory tier " + tier.path()), std::string::npos) << text;
  // What bounds the room: here the tier's limit, not the host's memory.
  EXPECT_NE(text.find("MiB of room: the tier's size limit)"), std::string::npos) << text;
  EXPECT_EQ(tier.newest_step(std::nullopt), std::nullopt);
}

TEST_F(memory_tier_test, adopt_commits_a_copy_of_another_tiers_shard) {
  auto tier = open();
  ASSERT_TRUE(save(tier, 3));
  auto other = memory_tier::open(dir_.sub("other"), 0, 1);
  ASSERT_TRUE(other);
  auto from = tier.files_of(3);
  auto adopted = other->adopt(3, 30, std::filesystem::file_size(from.index),
                              std::filesystem::file_size(from.data),
                              [&](const memory_tier::shard_files& into) {
                                std::filesystem::copy_file(from.index, into.index);
                                std::filesystem::copy_file(from.data, into.data);
                                return caf::error{};
                              });
  ASSERT_TRUE(adopted) << describe(adopted.error());
  EXPECT_EQ(other->newest_step(std::nullopt), 3);
  worker_state fresh{state_bytes};
  bool touched = false;
  auto restored = other->restore_step(3, fresh.registry, touched);
  ASSERT_TRUE(restored) << describe(restored.error());
  EXPECT_EQ(restored->total_run_calls, 30);
  EXPECT_TRUE(fresh.holds(3));
}

TEST_F(memory_tier_test, a_failed_adopt_leaves_no_step_and_replaces_none) {
  auto tier = open();
  ASSERT_TRUE(save(tier, 3));
  auto failed = tier.adopt(3, 30, 1, 0, [](const memory_tier::shard_files& into) {
    testing::write_file(into.index, "half");
    return make_error(errc::io_error, "the peer went away");
  });
  ASSERT_FALSE(failed);
  EXPECT_EQ(describe(failed.error()).find("the peer went away") != std::string::npos, true);
  // The old copy of the step was uncommitted first: nothing is left to read.
  EXPECT_EQ(tier.newest_step(std::nullopt), std::nullopt);
  EXPECT_FALSE(testing::exists(tier.path() + "/" + step_dir_name(3)));
}

// The tier's directories are in /dev/shm under a name another user can work
// out: one that another user made, or may change, is never used.
TEST_F(memory_tier_test, directories_another_user_made_or_may_change_are_refused) {
  auto job = dir_.sub("job");
  auto refused = [&](const std::string& why) {
    auto tier = memory_tier::open(job, rank, world_size);
    if (tier) return ::testing::AssertionFailure() << "opened, expected: " << why;
    if (tier.error() != make_error(errc::refused) ||
        describe(tier.error()).find(why) == std::string::npos)
      return ::testing::AssertionFailure() << describe(tier.error());
    return ::testing::AssertionSuccess();
  };
  std::filesystem::create_directories(job);
  ::chmod(job.c_str(), 0777);
  EXPECT_TRUE(refused(job + " is writable by other users"));
  // Sticky, as /dev/shm itself is: others cannot touch what this user made.
  ::chmod(job.c_str(), 01777);
  EXPECT_TRUE(memory_tier::open(job, rank, world_size));
  std::filesystem::remove_all(job);

  std::filesystem::create_directories(job);
  auto elsewhere = dir_.sub("elsewhere");
  std::filesystem::create_directories(elsewhere);
  std::filesystem::create_directory_symlink(elsewhere, job + "/rank-00002-of-00004");
  EXPECT_TRUE(refused(job + "/rank-00002-of-00004 is no directory"));
  std::filesystem::remove(job + "/rank-00002-of-00004");

  if (::geteuid() != 0) GTEST_SKIP() << "another user's directory needs root to make (chown)";
  constexpr uid_t nobody = 65534;
  ASSERT_EQ(::chown(job.c_str(), nobody, nobody), 0);
  EXPECT_TRUE(refused(job + " belongs to uid 65534"));
  ASSERT_EQ(::chown(job.c_str(), 0, 0), 0);
  std::filesystem::create_directories(job + "/rank-00002-of-00004");
  ASSERT_EQ(::chown((job + "/rank-00002-of-00004").c_str(), nobody, nobody), 0);
  EXPECT_TRUE(refused("rank-00002-of-00004 belongs to uid 65534"));
}

TEST_F(memory_tier_test, a_crash_leftover_is_removed_at_open) {
  auto leftover = dir_.sub("job") + "/rank-00002-of-00004/" + step_dir_name(7);
  std::filesystem::create_directories(leftover);
  auto tier = open();
  EXPECT_FALSE(testing::exists(leftover));
}

// The same job started twice on one host: the second start would take the
// first's save in progress for a crash's leftover and remove it.
TEST_F(memory_tier_test, a_tier_in_use_is_refused_and_left_as_it_is) {
  auto tier = open();
  auto in_progress = tier.path() + "/" + step_dir_name(7);
  std::filesystem::create_directories(in_progress);
  auto second = memory_tier::open(dir_.sub("job"), rank, world_size);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error(), make_error(errc::already_exists));
  EXPECT_NE(describe(second.error()).find(tier.path() + " is in use by another process"),
            std::string::npos)
      << describe(second.error());
  EXPECT_TRUE(testing::exists(in_progress));
  // Another rank's tier is another directory.
  EXPECT_TRUE(memory_tier::open(dir_.sub("job"), rank + 1, world_size));
}

// The job started again with another number of workers while the first
// still runs: each would write its steps over the other's.
TEST_F(memory_tier_test, a_job_of_another_size_on_the_same_directory_is_refused_while_it_runs) {
  {
    auto tier = open();
    auto other = memory_tier::open(dir_.sub("job"), rank, world_size + 1);
    ASSERT_FALSE(other);
    EXPECT_EQ(other.error(), make_error(errc::already_exists));
    EXPECT_NE(describe(other.error())
                  .find("holds the memory tier of a job of " + std::to_string(world_size) +
                        " workers that is running on the same checkpoint directory"),
              std::string::npos)
        << describe(other.error());
    // The refused open leaves nothing: the running job's directory goes at
    // its clean end.
    EXPECT_FALSE(testing::exists(dir_.sub("job/rank-00002-of-00005")));
  }
  // Its tiers left behind by a job that ended are no job's.
  EXPECT_TRUE(memory_tier::open(dir_.sub("job"), rank, world_size + 1));
}

// The job preempted and started again with fewer workers: each new worker
// looks at the ended job's tiers at once, and one's look (a shared lock for
// an instant, held here for as long as the test needs) is no worker of a
// running job to the other. Seen: 1 start in 6 of 2 workers after a 4-worker
// job had exited was refused that way, instead of the restore's own
// "written by 4 workers, this job has 2".
TEST_F(memory_tier_test, another_starts_look_at_an_ended_jobs_tier_is_no_running_job) {
  open();
  auto ended = dir_.sub("job/rank-00002-of-00004");
  int look = ::open(ended.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(look, 0);
  ASSERT_EQ(::flock(look, LOCK_SH | LOCK_NB), 0);
  auto other = memory_tier::open(dir_.sub("job"), rank, world_size - 2);
  EXPECT_TRUE(other) << describe(other.error());
  ::close(look);
}

// LIFEBOAT_LOCAL_DIR serves the checkpoint directory that claimed it first,
// until that directory is gone or made again.
TEST_F(memory_tier_test, a_local_dir_serves_the_checkpoint_directory_that_claimed_it) {
  namespace fs = std::filesystem;
  auto [local, first, second] = make_local_dirs();
  ASSERT_FALSE(claim_local_memory_dir(local, first));
  ASSERT_FALSE(claim_local_memory_dir(local, first));
  std::string rank_dir;
  {
    auto tier = memory_tier::open(local, rank, world_size);
    ASSERT_TRUE(tier);
    ASSERT_TRUE(save(*tier, 1));
    rank_dir = tier->path();
  }
  auto refused = claim_local_memory_dir(local, second);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused, make_error(errc::refused));
  EXPECT_NE(
      describe(refused).find("holds the memory tier of another checkpoint directory, " + first),
      std::string::npos)
      << describe(refused);
  EXPECT_TRUE(testing::exists(rank_dir));
  // Gone: no start restores its tiers, and the next checkpoint directory
  // takes the directory over.
  fs::remove_all(first);
  ASSERT_FALSE(claim_local_memory_dir(local, second));
  EXPECT_FALSE(testing::exists(rank_dir));
  {
    auto tier = memory_tier::open(local, rank, world_size);
    ASSERT_TRUE(tier);
    ASSERT_TRUE(save(*tier, 2));
  }
  // Made again (the same path, another directory): a fresh start that must
  // not restore what the removed one saved.
  auto before = memory_dir_name(second);
  fs::remove_all(second);
  fs::create_directories(second);
  if (memory_dir_name(second) == before)
    GTEST_SKIP() << "this file system cannot tell a directory made again (same inode, no birth "
                    "time)";
  EXPECT_TRUE(starts_fresh(local, second));
}

// LIFEBOAT_LOCAL_DIR where other files live too (a tmpfs's root, say): a
// clean end removes the job's tier and its record and nothing else, and the
// next checkpoint directory takes the directory, the first one still there.
TEST_F(memory_tier_test, a_finished_jobs_local_dir_goes_to_the_next_checkpoint_directory) {
  auto [local, first, second] = make_local_dirs();
  ASSERT_FALSE(claim_local_memory_dir(local, first));
  auto others = local + "/another-programs-file";
  testing::write_file(others, "kept");
  {
    auto tier = memory_tier::open(local, rank, world_size);
    ASSERT_TRUE(tier);
    ASSERT_TRUE(save(*tier, 1));
    EXPECT_FALSE(tier->remove());
  }
  EXPECT_EQ(testing::read_file(others), "kept");
  EXPECT_FALSE(testing::exists(local + "/CHECKPOINT_DIR"));
  EXPECT_FALSE(testing::exists(local + "/CHECKPOINT_ID"));
  EXPECT_TRUE(starts_fresh(local, second));
  EXPECT_EQ(testing::read_file(local + "/CHECKPOINT_DIR"), second);
}

// A record that no tier came with (its job ended, or never saved) holds
// nothing to restore: it does not keep another checkpoint directory out.
TEST_F(memory_tier_test, a_record_without_tiers_does_not_refuse_another_checkpoint_directory) {
  auto [local, first, second] = make_local_dirs();
  ASSERT_FALSE(claim_local_memory_dir(local, first));
  ASSERT_FALSE(claim_local_memory_dir(local, second));
  EXPECT_EQ(testing::read_file(local + "/CHECKPOINT_DIR"), second);
  // Now with a tier of the second: the first is refused.
  {
    auto tier = memory_tier::open(local, rank, world_size);
    ASSERT_TRUE(tier);
    ASSERT_TRUE(save(*tier, 1));
  }
  EXPECT_EQ(claim_local_memory_dir(local, first), make_error(errc::refused));
}

TEST_F(memory_tier_test, none_committed_in_names_a_job_directorys_ranks) {
  auto job = dir_.sub("job");
  EXPECT_EQ(none_committed_in(job), "no committed checkpoint in " + job);
  auto tier = open();
  EXPECT_EQ(none_committed_in(job),
            "no committed checkpoint in " + job +
                ": it is a memory tier's directory, with a checkpoint directory per rank: " +
                tier.path());
}

TEST_F(memory_tier_test, a_save_writes_into_the_spare_allocated_for_it) {
  auto tier = open();
  auto bytes = shard_bytes(3);
  ASSERT_FALSE(tier.prepare_spare(bytes));
  auto spare = tier.path() + "/" + memory_tier_spare_name;
  ASSERT_EQ(std::filesystem::file_size(spare), bytes);
  auto allocated = inode_of(spare);
  ASSERT_TRUE(save(tier, 3));
  // The data file is the spare, written over: its pages were there before.
  EXPECT_EQ(inode_of(tier.files_of(3).data), allocated);
  EXPECT_FALSE(testing::exists(spare));
  EXPECT_TRUE(restores(tier, 3));
}

// The checkpoint that retention drops gives its data file to the next save:
// its pages are not freed and allocated again.
TEST_F(memory_tier_test, the_checkpoint_retention_drops_becomes_the_spare) {
  auto tier = open();
  for (int64_t step : {1, 2}) ASSERT_TRUE(save(tier, step));
  auto oldest = inode_of(tier.files_of(1).data);
  ASSERT_TRUE(save(tier, 3));
  EXPECT_EQ(inode_of(tier.path() + "/" + memory_tier_spare_name), oldest);
  EXPECT_FALSE(testing::exists(tier.path() + "/" + step_dir_name(1)));
  EXPECT_EQ(tier.newest_step(2), 2);
  ASSERT_TRUE(save(tier, 4));
  EXPECT_EQ(inode_of(tier.files_of(4).data), oldest);
  EXPECT_TRUE(restores(tier, 4));
}

// State saved through callbacks changes the shard's size from save to save:
// a spare a little larger or smaller is resized and written into.
TEST_F(memory_tier_test, a_spare_of_a_near_size_is_resized_and_written_into) {
  for (int64_t off : {int64_t{4096}, int64_t{-4096}, int64_t{-1}}) {
    auto tier = open();
    ASSERT_FALSE(tier.prepare_spare(static_cast<uint64_t>(shard_bytes(3) + off)));
    auto spare = tier.path() + "/" + memory_tier_spare_name;
    auto allocated = inode_of(spare);
    ASSERT_TRUE(save(tier, 3));
    EXPECT_EQ(inode_of(tier.files_of(3).data), allocated) << off;
    EXPECT_FALSE(testing::exists(spare));
    EXPECT_EQ(std::filesystem::file_size(tier.files_of(3).data), shard_bytes(3)) << off;
    EXPECT_TRUE(restores(tier, 3)) << off;
    std::filesystem::remove_all(dir_.sub("job"));
  }
}

TEST_F(memory_tier_test, a_spare_that_cannot_be_resized_is_dropped_not_written_into) {
  auto files = std::make_shared<testing::faulty_file_system>();
  files->fail(testing::faulty_file_system::call::ftruncate,
              "*/" + std::string{memory_tier_spare_name}, EIO);
  auto opened = memory_tier::open(dir_.sub("job"), rank, world_size, memory_tier::unbounded, files);
  ASSERT_TRUE(opened) << describe(opened.error());
  auto& tier = *opened;
  ASSERT_FALSE(tier.prepare_spare(shard_bytes(3) + 4096));
  auto spare = tier.path() + "/" + memory_tier_spare_name;
  auto allocated = inode_of(spare);
  // Held open, the dropped spare keeps its inode number: tmpfs gave a freed
  // one to the new data file (seen in a fresh-clone CI), which read as the
  // spare written into.
  int held = ::open(spare.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(held, 0) << spare;
  ASSERT_TRUE(save(tier, 3));
  struct stat dropped {};
  EXPECT_EQ(::fstat(held, &dropped), 0);
  ::close(held);
  EXPECT_EQ(dropped.st_nlink, 0u);
  EXPECT_FALSE(testing::exists(spare));
  EXPECT_NE(inode_of(tier.files_of(3).data), allocated);
  EXPECT_EQ(std::filesystem::file_size(tier.files_of(3).data), shard_bytes(3));
  EXPECT_TRUE(restores(tier, 3));
  EXPECT_EQ(files->injected(), 1);
}

TEST_F(memory_tier_test, no_spare_is_made_at_the_cost_of_a_kept_checkpoint) {
  // Room for one shard and its allowance (1 MiB), not for a spare beside it.
  auto tier = open((uint64_t{1} << 20) + state_bytes + (uint64_t{64} << 10));
  ASSERT_TRUE(save(tier, 1));
  auto err = tier.prepare_spare(shard_bytes(3));
  ASSERT_TRUE(err);
  EXPECT_NE(describe(err).find("no spare"), std::string::npos) << describe(err);
  EXPECT_NE(describe(err).find("beside its checkpoints: the tier's size limit)"), std::string::npos)
      << describe(err);
  EXPECT_FALSE(testing::exists(tier.path() + "/" + memory_tier_spare_name));
  EXPECT_EQ(tier.newest_step(std::nullopt), 1);
}

TEST_F(memory_tier_test, adopt_writes_a_peers_shard_over_the_spare) {
  auto tier = open();
  ASSERT_TRUE(save(tier, 3));
  auto other = memory_tier::open(dir_.sub("other"), 0, 1);
  ASSERT_TRUE(other);
  auto from = tier.files_of(3);
  auto data_bytes = std::filesystem::file_size(from.data);
  ASSERT_FALSE(other->prepare_spare(data_bytes));
  auto allocated = inode_of(other->path() + "/" + memory_tier_spare_name);
  auto adopted = other->adopt(3, 30, std::filesystem::file_size(from.index), data_bytes,
                              [&](const memory_tier::shard_files& into) {
                                EXPECT_EQ(inode_of(into.data), allocated);
                                std::filesystem::copy_file(from.index, into.index);
                                testing::write_file(into.data, testing::read_file(from.data));
                                return caf::error{};
                              });
  ASSERT_TRUE(adopted) << describe(adopted.error());
  EXPECT_TRUE(restores(*other, 3));
}

TEST_F(memory_tier_test, a_spare_left_half_made_goes_at_open_and_a_whole_one_stays) {
  std::string spare;
  {
    auto tier = open();
    ASSERT_FALSE(tier.prepare_spare(shard_bytes(3)));
    spare = tier.path() + "/" + memory_tier_spare_name;
    testing::write_file(spare + ".tmp", "half");
  }
  auto again = open();
  EXPECT_FALSE(testing::exists(spare + ".tmp"));
  EXPECT_EQ(std::filesystem::file_size(spare), shard_bytes(3));
}

TEST_F(memory_tier_test, remove_leaves_no_directory) {
  auto tier = open();
  ASSERT_TRUE(save(tier, 1));
  EXPECT_FALSE(tier.remove());
  EXPECT_FALSE(testing::exists(dir_.sub("job")));
}

TEST_F(memory_tier_test, the_default_directory_is_under_dev_shm_and_per_checkpoint_directory) {
  auto first = default_memory_dir(dir_.path());
  ASSERT_TRUE(first) << describe(first.error());
  EXPECT_EQ(first->rfind(std::string{default_memory_root} + "/lifeboat-", 0), 0u) << *first;
  std::filesystem::create_directories(dir_.sub("other"));
  auto other = default_memory_dir(dir_.sub("other"));
  ASSERT_TRUE(other);
  EXPECT_NE(*first, *other);
  EXPECT_EQ(default_memory_dir(dir_.path()), first);
  EXPECT_FALSE(default_memory_dir(dir_.sub("absent")));
}

TEST_F(memory_tier_test, a_checkpoint_directory_made_again_with_the_same_inode_starts_fresh) {
  namespace fs = std::filesystem;
  auto ckpt = dir_.sub("again");
  fs::create_directories(ckpt);
  auto first = default_memory_dir(ckpt);
  ASSERT_TRUE(first) << describe(first.error());
  struct stat old_dir {};
  ASSERT_EQ(::stat(ckpt.c_str(), &old_dir), 0);
  // Made again until it has the old directory's inode number (ext4 hands a
  // freed one out at once), so that the inode cannot tell them apart.
  bool same_inode = false;
  for (int attempt = 0; attempt < 100 && !same_inode; ++attempt) {
    fs::remove(ckpt);
    fs::create_directory(ckpt);
    struct stat new_dir {};
    ASSERT_EQ(::stat(ckpt.c_str(), &new_dir), 0);
    same_inode = new_dir.st_ino == old_dir.st_ino;
  }
  if (!same_inode) GTEST_SKIP() << "the file system gave no freed inode number out again";
  struct statx born {};
  ASSERT_EQ(::statx(AT_FDCWD, ckpt.c_str(), 0, STATX_BTIME, &born), 0);
  if ((born.stx_mask & STATX_BTIME) == 0) GTEST_SKIP() << "the file system keeps no birth time";
  auto again = default_memory_dir(ckpt);
  ASSERT_TRUE(again);
  EXPECT_NE(*again, *first);
}

TEST_F(memory_tier_test, the_tiers_of_checkpoint_directories_that_are_gone_are_removed) {
  namespace fs = std::filesystem;
  // Three jobs' memory directories side by side: one whose checkpoint
  // directory exists, one whose directory was removed, one without a record.
  auto parent = dir_.sub("shm");
  auto live_ckpt = dir_.sub("live");
  auto gone_ckpt = dir_.sub("gone");
  fs::create_directories(live_ckpt);
  fs::create_directories(gone_ckpt);
  auto job_dir = [&](const std::string& ckpt) {
    return parent + "/" + fs::path{*default_memory_dir(ckpt)}.filename().string();
  };
  auto live = job_dir(live_ckpt);
  auto gone = job_dir(gone_ckpt);
  auto unrecorded = parent + "/lifeboat-0000000000000000";
  for (auto* d : {&live, &gone}) ASSERT_TRUE(memory_tier::open(*d, 0, 1));
  ASSERT_FALSE(remove_orphaned_memory_tiers(gone, gone_ckpt));
  fs::remove_all(gone_ckpt);
  fs::create_directories(unrecorded);
  ASSERT_FALSE(remove_orphaned_memory_tiers(live, live_ckpt));
  EXPECT_TRUE(fs::exists(live + "/rank-00000-of-00001"));
  EXPECT_FALSE(fs::exists(gone));
  EXPECT_TRUE(fs::exists(unrecorded));
  // The removal alone, as a test's directory does at its end: once the live
  // job's directory is gone, its tier goes too, and nothing else.
  fs::remove_all(live_ckpt);
  ASSERT_FALSE(remove_orphaned_memory_tiers_in(parent));
  EXPECT_FALSE(fs::exists(live));
  EXPECT_TRUE(fs::exists(unrecorded));
}

// A job that went on on another host (its checkpoint directory shared) left
// its tier here: the directory's newer checkpoints are what any restore
// reads, so the tier only holds host memory, and goes once no worker holds
// it. A tier as new as its directory stays for the next start.
TEST_F(memory_tier_test, a_tier_older_than_its_checkpoint_directory_goes_once_no_worker_holds_it) {
  namespace fs = std::filesystem;
  auto parent = dir_.sub("shm");
  auto job_dir = [&](const std::string& ckpt) {
    fs::create_directories(ckpt);
    return parent + "/" + fs::path{*default_memory_dir(ckpt)}.filename().string();
  };
  // Saves `step` in the checkpoint directory `ckpt` as its only worker.
  auto save_in_directory = [&](const std::string& ckpt, int64_t step) {
    auto directory = store::open({ckpt, 0, 1});
    ASSERT_TRUE(directory);
    state_.set(step);
    auto snap = directory->take_snapshot(state_.registry);
    ASSERT_TRUE(snap);
    ASSERT_TRUE(directory->write_shard(*snap, step));
    ASSERT_FALSE(directory->commit(step, step));
  };
  auto moved_ckpt = dir_.sub("moved");
  auto current_ckpt = dir_.sub("current");
  auto moved = job_dir(moved_ckpt);
  auto current = job_dir(current_ckpt);
  {
    auto tier = memory_tier::open(current, 0, 1);
    ASSERT_TRUE(tier);
    ASSERT_TRUE(save(*tier, 5));
    ASSERT_FALSE(remove_orphaned_memory_tiers(current, current_ckpt));
  }
  save_in_directory(current_ckpt, 5);
  auto opened = memory_tier::open(moved, 0, 1);
  ASSERT_TRUE(opened);
  std::optional<memory_tier> held{std::move(*opened)};
  ASSERT_TRUE(save(*held, 1));
  ASSERT_FALSE(remove_orphaned_memory_tiers(moved, moved_ckpt));
  save_in_directory(moved_ckpt, 4);
  ASSERT_FALSE(remove_orphaned_memory_tiers_in(parent));
  EXPECT_TRUE(fs::exists(moved));
  held.reset();
  ::testing::internal::CaptureStderr();
  ASSERT_FALSE(remove_orphaned_memory_tiers_in(parent));
  auto log = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(fs::exists(moved));
  EXPECT_NE(log.find("removed the memory tier " + moved + " older than the newest checkpoint of " +
                     moved_ckpt + " (step 4)"),
            std::string::npos)
      << log;
  EXPECT_TRUE(fs::exists(current + "/rank-00000-of-00001"));
}

TEST_F(memory_tier_test, the_last_rank_to_go_removes_the_record_too) {
  auto job = dir_.sub("job");
  auto tier = open();
  ASSERT_FALSE(remove_orphaned_memory_tiers(job, dir_.path()));
  EXPECT_FALSE(tier.remove());
  EXPECT_FALSE(testing::exists(job));
}

}  // namespace
}  // namespace lifeboat::checkpoint
