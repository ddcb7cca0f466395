#include "lifeboat/restore_checkpoint.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "checkpoint/store.hpp"
#include "lifeboat/errors.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/support/build_tree.hpp"

namespace lifeboat {
namespace {

namespace fs = std::filesystem;
using checkpoint::testing::temp_dir;

// One worker's state through the public API: 4 KiB of bytes and a note saved
// through callbacks, both set from a step.
struct job_state {
  std::vector<unsigned char> bytes = std::vector<unsigned char>(4096);
  std::string note;
  checkpoint_state state;

  job_state() {
    state.add_buffer("bytes", bytes.data(), bytes.size());
    state.add_callbacks(
        "note", [this] { return note; }, [this](const std::string& saved) { note = saved; });
    set(0);
  }
  job_state(const job_state&) = delete;
  job_state& operator=(const job_state&) = delete;

  void set(int64_t step) {
    std::fill(bytes.begin(), bytes.end(), static_cast<unsigned char>(step));
    note = "step " + std::to_string(step);
  }
  bool holds(int64_t step) const {
    return note == "step " + std::to_string(step) &&
           std::all_of(bytes.begin(), bytes.end(),
                       [&](unsigned char b) { return b == static_cast<unsigned char>(step); });
  }
};

// Commits `steps` in `dir` as the job of one worker would (the store keeps
// the newest two).
void save(const std::string& dir, std::initializer_list<int64_t> steps) {
  auto store = checkpoint::store::open({dir, 0, 1});
  ASSERT_TRUE(store) << describe(store.error());
  job_state job;
  for (auto step : steps) {
    job.set(step);
    auto snap = store->take_snapshot(job.state.registry());
    ASSERT_TRUE(snap) << describe(snap.error());
    auto shard = store->write_shard(*snap, step);
    ASSERT_TRUE(shard) << describe(shard.error());
    ASSERT_FALSE(store->commit(step, step));
  }
}

// `dir` and everything under it, with sizes and modification times.
std::vector<std::tuple<std::string, uintmax_t, fs::file_time_type>> listing(
    const std::string& dir) {
  std::vector<std::tuple<std::string, uintmax_t, fs::file_time_type>> entries{
      {dir, 0, fs::last_write_time(dir)}};
  for (auto& entry : fs::recursive_directory_iterator(dir))
    entries.emplace_back(entry.path().string(), entry.is_regular_file() ? entry.file_size() : 0,
                         entry.last_write_time());
  std::sort(entries.begin(), entries.end());
  return entries;
}

std::string data_file(const std::string& step_dir) {
  for (auto& entry : fs::directory_iterator(step_dir))
    if (entry.path().extension() == ".data") return entry.path().string();
  return {};
}

// The checkpoint of store_test's format fixture: two ranks' shards of step 17.
TEST(restore_checkpoint, reads_each_ranks_shard_of_a_job_of_two_outside_the_job) {
  temp_dir dir;
  fs::copy(test::built("tests/checkpoint/testdata/format-2026-11-25"), dir.path(),
           fs::copy_options::recursive);
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<unsigned char> weights(3000), moments(500);
    std::string schedule;
    checkpoint_state state;
    state.add_buffer("model/weights", weights.data(), weights.size());
    state.add_buffer("optimizer/moments", moments.data(), moments.size());
    state.add_callbacks(
        "schedule", [] { return std::string{}; },
        [&](const std::string& saved) { schedule = saved; });
    auto restored = restore_checkpoint(state, dir.path(), rank);
    ASSERT_TRUE(restored);
    EXPECT_EQ(restored->step, 17);
    EXPECT_EQ(restored->total_run_calls, 17);
    EXPECT_EQ(restored->path, dir.path() + "/step-000000000017");
    for (size_t i = 0; i < weights.size(); ++i)
      ASSERT_EQ(weights[i], static_cast<unsigned char>(i * 7 + rank)) << "byte " << i;
    for (size_t i = 0; i < moments.size(); ++i)
      ASSERT_EQ(moments[i], static_cast<unsigned char>(255 - i - rank)) << "byte " << i;
    EXPECT_EQ(schedule, "{\"epoch\": 3, \"rank\": " + std::to_string(rank) + "}");
  }
}

TEST(restore_checkpoint, restores_the_newest_and_writes_nothing_in_the_directory) {
  temp_dir dir;
  save(dir.path(), {3, 6});
  auto before = listing(dir.path());
  job_state job;
  auto restored = restore_checkpoint(job.state, dir.path());
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->step, 6);
  EXPECT_TRUE(job.holds(6));
  EXPECT_EQ(listing(dir.path()), before);
}

TEST(restore_checkpoint, a_directory_without_a_committed_checkpoint_gives_none) {
  temp_dir dir;
  job_state job;
  EXPECT_FALSE(restore_checkpoint(job.state, dir.path()));
  // A step directory without its MANIFEST is a save that never committed.
  fs::create_directory(dir.sub("step-000000000004"));
  EXPECT_FALSE(restore_checkpoint(job.state, dir.path()));
  EXPECT_TRUE(job.holds(0));
}

// The message of what restore_checkpoint(state, dir, rank, step) throws as E.
template <class E>
std::string thrown(checkpoint_state& state, const std::string& dir, int rank = 0,
                   std::optional<int64_t> step = std::nullopt) {
  try {
    restore_checkpoint(state, dir, rank, step);
  } catch (const E& e) {
    return e.what();
  }
  return "nothing thrown as expected";
}

TEST(restore_checkpoint, refuses_what_cannot_be_that_jobs_state_before_reading) {
  temp_dir dir;
  save(dir.path(), {2});
  job_state job;
  EXPECT_EQ(thrown<config_error>(job.state, dir.sub("absent")),
            "checkpoint directory " + dir.sub("absent") + ": No such file or directory");
  EXPECT_EQ(thrown<config_error>(job.state, dir.path(), 1),
            "the checkpoints in " + dir.path() +
                " were written by 1 workers: rank 1 is none of "
                "them");
  EXPECT_EQ(thrown<config_error>(job.state, dir.path(), -1), "rank -1 is no rank");

  std::vector<unsigned char> other(100);
  checkpoint_state smaller;
  smaller.add_buffer("bytes", other.data(), other.size());
  EXPECT_NE(thrown<config_error>(smaller, dir.path()).find("bytes"), std::string::npos);

  checkpoint_state checked;
  checked.add_buffer("bytes", job.bytes.data(), job.bytes.size());
  checked.add_check([] { throw std::runtime_error("the model moved"); });
  EXPECT_NE(thrown<config_error>(checked, dir.path()).find("the model moved"), std::string::npos);
  EXPECT_TRUE(job.holds(0));
}

// An evaluation loads the model and leaves the optimizer's state out.
TEST(restore_checkpoint, a_state_that_registers_part_of_the_checkpoint_gets_that_part) {
  temp_dir dir;
  save(dir.path(), {5});
  std::vector<unsigned char> bytes(4096);
  checkpoint_state part;
  part.add_buffer("bytes", bytes.data(), bytes.size());
  auto restored = restore_checkpoint(part, dir.path());
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->step, 5);
  EXPECT_EQ(bytes, std::vector<unsigned char>(4096, 5));

  std::vector<unsigned char> other(8);
  checkpoint_state more;
  more.add_buffer("bytes", bytes.data(), bytes.size());
  more.add_buffer("other", other.data(), other.size());
  EXPECT_NE(thrown<config_error>(more, dir.path())
                .find("'other' is registered but not in the checkpoint"),
            std::string::npos);
}

// An evaluator beside the training: the steps committed so far, each read
// by its number.
TEST(restore_checkpoint, committed_steps_lists_them_and_a_named_step_restores_that_one) {
  temp_dir dir;
  EXPECT_EQ(committed_steps(dir.path()), std::vector<int64_t>{});
  save(dir.path(), {3, 6});
  fs::create_directory(dir.sub("step-000000000009"));  // a save under way
  ASSERT_EQ(committed_steps(dir.path()), (std::vector<int64_t>{3, 6}));
  job_state job;
  auto restored = restore_checkpoint(job.state, dir.path(), 0, 3);
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->step, 3);
  EXPECT_TRUE(job.holds(3));

  EXPECT_EQ(thrown<checkpoint_error>(job.state, dir.path(), 0, 9),
            "no committed checkpoint of step 9 in " + dir.path());
  EXPECT_TRUE(job.holds(3));
  EXPECT_THROW(committed_steps(dir.sub("absent")), config_error);
}

TEST(restore_checkpoint, a_corrupt_checkpoint_gives_the_one_before_and_none_verifying_throws) {
  temp_dir dir;
  save(dir.path(), {1, 2});
  ASSERT_TRUE(checkpoint::testing::flip_byte(data_file(dir.sub("step-000000000002")), 100));
  job_state job;
  auto restored = restore_checkpoint(job.state, dir.path());
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->step, 1);
  EXPECT_TRUE(job.holds(1));

  ASSERT_TRUE(checkpoint::testing::flip_byte(data_file(dir.sub("step-000000000001")), 100));
  EXPECT_NE(thrown<checkpoint_error>(job.state, dir.path()).find("verified"), std::string::npos);
  auto corrupt = thrown<checkpoint_error>(job.state, dir.path(), 0, 2);
  EXPECT_NE(corrupt.find("corrupt"), std::string::npos) << corrupt;
}

// The public check of a whole checkpoint: the newest by default, or a named
// step; what it refuses, it names.
TEST(restore_checkpoint,
     verify_checkpoint_checks_the_newest_or_a_named_step_and_names_what_is_wrong) {
  temp_dir dir;
  save(dir.path(), {3, 6});
  auto newest = verify_checkpoint(dir.path());
  EXPECT_EQ(newest.step, 6);
  EXPECT_EQ(newest.total_run_calls, 6);
  EXPECT_EQ(newest.world_size, 1);
  EXPECT_EQ(newest.path, dir.path() + "/step-000000000006");
  EXPECT_EQ(newest.bytes, fs::file_size(data_file(newest.path)));
  EXPECT_EQ(verify_checkpoint(dir.path(), 3).step, 3);

  ASSERT_TRUE(checkpoint::testing::flip_byte(data_file(newest.path), 100));
  try {
    verify_checkpoint(dir.path());
    ADD_FAILURE() << "a corrupt newest checkpoint verified";
  } catch (const checkpoint_error& e) {
    EXPECT_NE(std::string{e.what()}.find(data_file(newest.path) + ": checksum mismatch in chunk 0"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(verify_checkpoint(dir.path(), 3).step, 3);
  EXPECT_THROW(verify_checkpoint(dir.path(), 4), checkpoint_error);
  EXPECT_THROW(verify_checkpoint(dir.sub("absent")), config_error);
  temp_dir empty;
  EXPECT_THROW(verify_checkpoint(empty.path()), checkpoint_error);
}

}  // namespace
}  // namespace lifeboat
