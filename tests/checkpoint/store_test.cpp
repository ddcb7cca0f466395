#include "checkpoint/store.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "checkpoint/layout.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/checkpoint/worker_state.hpp"
#include "tests/support/build_tree.hpp"

namespace lifeboat::checkpoint {
namespace {

using testing::exists;
using testing::worker_state;

constexpr std::size_t state_bytes = 256 * 1024;

class store_test : public ::testing::Test {
 protected:
  store open(int max_to_keep = default_max_to_keep) {
    auto st = store::open({dir_.path(), 0, 1, max_to_keep});
    EXPECT_TRUE(st) << describe(st.error());
    return std::move(*st);
  }

  // Saves `step`; without `commit` it is left as a crash would leave it.
  void save(store& st, int64_t step, bool commit = true) {
    state_.set(step);
    auto snap = st.take_snapshot(state_.registry);
    ASSERT_TRUE(snap);
    auto info = st.write_shard(*snap, step);
    ASSERT_TRUE(info) << describe(info.error());
    EXPECT_EQ(info->bytes, static_cast<int64_t>(snap->size()));
    if (commit) {
      ASSERT_FALSE(st.commit(step, step * 10));
    }
  }

  testing::temp_dir dir_;
  worker_state state_{state_bytes};
};

// A checkpoint that the store of 2026-11-25 (commit ace6d67, before the
// memory and peer tiers) wrote and committed as step 17: two ranks, rank r
// with host buffers "model/weights" (3,000 bytes, byte i = i * 7 + r) and
// "optimizer/moments" (500 bytes, byte i = 255 - i - r), both mod 256, and
// callbacks "schedule" that saved {"epoch": 3, "rank": r}. A job restarted
// after an upgrade of lifeboat reads what it wrote before.
TEST(store_format, a_checkpoint_an_earlier_lifeboat_wrote_restores_bit_exact) {
  testing::temp_dir dir;
  std::filesystem::copy(lifeboat::test::built("tests/checkpoint/testdata/format-2026-11-25"),
                        dir.path(), std::filesystem::copy_options::recursive);
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<unsigned char> weights(3000), moments(500);
    std::string schedule;
    state_registry reg;
    ASSERT_FALSE(reg.add_host_buffer("model/weights", weights.data(), weights.size()));
    ASSERT_FALSE(reg.add_host_buffer("optimizer/moments", moments.data(), moments.size()));
    ASSERT_FALSE(reg.add_callbacks(
        "schedule", [] { return std::string{}; },
        [&](const std::string& saved) { schedule = saved; }));
    auto st = store::open({dir.path(), rank, 2, 2});
    ASSERT_TRUE(st) << describe(st.error());
    auto restored = st->restore_latest(reg);
    ASSERT_TRUE(restored) << describe(restored.error());
    ASSERT_TRUE(*restored);
    EXPECT_EQ((*restored)->step, 17);
    EXPECT_EQ((*restored)->total_run_calls, 17);
    for (size_t i = 0; i < weights.size(); ++i)
      ASSERT_EQ(weights[i], static_cast<unsigned char>(i * 7 + rank))
          << "rank " << rank << " byte " << i;
    for (size_t i = 0; i < moments.size(); ++i)
      ASSERT_EQ(moments[i], static_cast<unsigned char>(255 - i - rank))
          << "rank " << rank << " byte " << i;
    EXPECT_EQ(schedule, "{\"epoch\": 3, \"rank\": " + std::to_string(rank) + "}");
  }
}

// A reader's store: the directory of another job stays as it is.
TEST(store_open_existing, makes_and_writes_nothing) {
  testing::temp_dir dir;
  auto absent = dir.sub("absent");
  auto st = store::open_existing({absent, 0, 1});
  ASSERT_TRUE(st) << describe(st.error());
  EXPECT_FALSE(std::filesystem::exists(absent));
  EXPECT_EQ(st->committed_steps().error(), make_error(errc::io_error));
  auto before = std::filesystem::last_write_time(dir.path());
  ASSERT_TRUE(store::open_existing({dir.path(), 0, 1}));
  EXPECT_EQ(std::filesystem::last_write_time(dir.path()), before);
  EXPECT_EQ(store::open_existing({dir.path(), 1, 1}).error(), make_error(errc::invalid_config));
}

TEST_F(store_test, no_checkpoint_is_a_fresh_start) {
  auto st = open();
  auto restored = st.restore_latest(state_.registry);
  ASSERT_TRUE(restored);
  EXPECT_FALSE(*restored);
}

TEST_F(store_test, restores_the_newest_committed_checkpoint) {
  auto st = open();
  save(st, 1);
  save(st, 2);
  worker_state fresh{state_bytes};
  auto restored = st.restore_latest(fresh.registry);
  ASSERT_TRUE(restored && *restored);
  EXPECT_EQ((*restored)->step, 2);
  EXPECT_EQ((*restored)->total_run_calls, 20);
  EXPECT_EQ((*restored)->path, st.step_path(2));
  EXPECT_TRUE(fresh.holds(2));
}

// A clean-up of /tmp, a mistaken rm: the next save makes the directory again
// and goes there, and says so.
TEST_F(store_test, a_checkpoint_directory_removed_while_the_job_runs_is_made_again) {
  auto st = open();
  save(st, 1);
  std::filesystem::remove_all(dir_.path());
  ::testing::internal::CaptureStderr();
  save(st, 2);
  auto log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("checkpoint directory " + dir_.path() +
                     " was removed while the job ran: making it again"),
            std::string::npos)
      << log;
  worker_state fresh{state_bytes};
  auto restored = st.restore_latest(fresh.registry);
  ASSERT_TRUE(restored && *restored);
  EXPECT_EQ((*restored)->step, 2);
  EXPECT_TRUE(fresh.holds(2));
}

TEST_F(store_test, max_step_restores_an_older_checkpoint) {
  auto st = open();
  save(st, 1);
  save(st, 2);
  worker_state fresh{state_bytes};
  auto restored = st.restore_latest(fresh.registry, 1);
  ASSERT_TRUE(restored && *restored);
  EXPECT_EQ((*restored)->step, 1);
  EXPECT_TRUE(fresh.holds(1));
}

TEST_F(store_test, a_shard_without_manifest_is_not_restored) {
  auto st = open();
  save(st, 1);
  save(st, 2, false);
  worker_state fresh{state_bytes};
  auto restored = st.restore_latest(fresh.registry);
  ASSERT_TRUE(restored && *restored);
  EXPECT_EQ((*restored)->step, 1);
}

TEST_F(store_test, retention_keeps_the_newest_and_drops_older_leftovers) {
  auto st = open(2);
  save(st, 1);
  save(st, 2);
  // A crash leftover of step 3 (no manifest), then later commits.
  save(st, 3, false);
  save(st, 4);
  save(st, 5);
  auto steps = st.committed_steps();
  ASSERT_TRUE(steps);
  EXPECT_EQ(*steps, (std::vector<int64_t>{4, 5}));
  EXPECT_FALSE(exists(st.step_path(3)));
  EXPECT_FALSE(exists(st.step_path(1)));
}

TEST_F(store_test, retention_never_removes_the_checkpoint_just_committed) {
  auto st = open(1);
  save(st, 10);
  save(st, 5);  // an older step after a restart from an older checkpoint
  auto steps = st.committed_steps();
  ASSERT_TRUE(steps);
  EXPECT_EQ(*steps, (std::vector<int64_t>{5}));
}

TEST_F(store_test, remove_partial_removes_only_manifest_less_directories) {
  auto st = open();
  save(st, 1);
  save(st, 2, false);
  testing::write_file(dir_.sub("unrelated"), "x");
  ASSERT_FALSE(st.remove_partial());
  EXPECT_FALSE(exists(st.step_path(2)));
  EXPECT_TRUE(exists(st.step_path(1)));
  EXPECT_TRUE(exists(dir_.sub("unrelated")));
}

TEST_F(store_test, a_different_world_size_is_refused) {
  {
    auto st = open();
    save(st, 1);
  }
  auto st = store::open({dir_.path(), 0, 2});
  ASSERT_TRUE(st);
  auto restored = st->restore_latest(state_.registry);
  ASSERT_FALSE(restored);
  EXPECT_EQ(restored.error(), make_error(errc::invalid_config));
  EXPECT_NE(describe(restored.error())
                .find("written by 1 workers, this job has 2: a checkpoint restores into as many "
                      "workers as wrote it"),
            std::string::npos)
      << describe(restored.error());
}

TEST_F(store_test, a_different_registry_is_refused_with_the_differences) {
  auto st = open();
  save(st, 1);
  worker_state bigger{state_bytes * 2};
  auto restored = st.restore_latest(bigger.registry);
  ASSERT_FALSE(restored);
  EXPECT_EQ(restored.error(), make_error(errc::invalid_config));
  EXPECT_NE(describe(restored.error())
                .find("'weights' has 262144 bytes in the checkpoint but "
                      "524288 registered"),
            std::string::npos);
}

// The runtime prepares at start-up; the first save must then map nothing,
// and the user's callbacks must not run for it (their size is covered by the
// headroom).
TEST_F(store_test, prepare_maps_the_first_saves_staging_without_calling_callbacks) {
  auto st = open();
  std::vector<char> weights(state_bytes, 'w');
  int saves = 0;
  state_registry registry;
  ASSERT_FALSE(registry.add_host_buffer("weights", weights.data(), weights.size()));
  ASSERT_FALSE(registry.add_callbacks(
      "meta",
      [&] {
        ++saves;
        return std::string(100, 'm');
      },
      [](const std::string&) {}));
  ASSERT_FALSE(st.prepare(registry));
  EXPECT_EQ(saves, 0);
  EXPECT_EQ(st.pool().allocations(), 1u);
  auto snap = st.take_snapshot(registry);
  ASSERT_TRUE(snap) << describe(snap.error());
  EXPECT_EQ(saves, 1);
  EXPECT_EQ(st.pool().allocations(), 1u);
}

TEST_F(store_test, a_committed_step_is_not_written_again) {
  auto st = open();
  save(st, 1);
  auto snap = st.take_snapshot(state_.registry);
  ASSERT_TRUE(snap);
  auto again = st.write_shard(*snap, 1);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error(), make_error(errc::already_exists));
}

TEST_F(store_test, open_creates_missing_parent_directories) {
  auto st = store::open({dir_.sub("a/b/c"), 0, 1});
  ASSERT_TRUE(st) << describe(st.error());
  EXPECT_TRUE(exists(dir_.sub("a/b/c")));
}

// Every worker of a job opens the same directory at start-up; each one's
// writability probe must not trip over another's.
TEST_F(store_test, many_workers_open_one_directory_at_once) {
  constexpr int workers = 8;
  constexpr int opens_per_worker = 20;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int rank = 0; rank < workers; ++rank) {
    threads.emplace_back([&, rank] {
      for (int i = 0; i < opens_per_worker; ++i)
        if (!store::open({dir_.path(), rank, workers})) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(store_test, only_the_commit_rank_commits) {
  auto st = store::open({dir_.path(), 1, 2});
  ASSERT_TRUE(st);
  EXPECT_EQ(st->commit(1, 0), make_error(errc::invalid_argument));
}

TEST_F(store_test, bad_configurations_are_refused) {
  EXPECT_EQ(store::open({"", 0, 1}).error(), make_error(errc::invalid_config));
  EXPECT_EQ(store::open({dir_.path(), 2, 2}).error(), make_error(errc::invalid_config));
  EXPECT_EQ(store::open({dir_.path(), 0, 1, 0}).error(), make_error(errc::invalid_config));
}

}  // namespace
}  // namespace lifeboat::checkpoint
