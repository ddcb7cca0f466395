// The workers' checkpoint records in the coordination service, and the job's
// last checkpoint a coordinator reads from them.
#include "actors/preemption/checkpoint_record.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace lifeboat;

namespace {

wire::CheckpointInfo shard(int64_t step, const std::string& path, int64_t bytes, double seconds,
                           std::vector<std::pair<std::string, double>> tiers = {}) {
  wire::CheckpointInfo info;
  info.set_step(step);
  info.set_path(path);
  info.set_bytes(bytes);
  info.set_seconds(seconds);
  for (auto& [name, s] : tiers) {
    auto* tier = info.add_tiers();
    tier->set_name(name);
    tier->set_seconds(s);
  }
  return info;
}

void put(std::map<std::string, std::string>& records, int32_t rank,
         const wire::CheckpointInfo& info) {
  records[checkpoint_record_key(info.step(), rank)] = info.SerializeAsString();
}

TEST(checkpoint_record, keys_sort_by_step_then_rank_and_none_is_a_prefix_of_another) {
  EXPECT_EQ(checkpoint_record_key(42, 3),
            std::string{checkpoint_key_prefix} + "0000000000000000042/0000000003");
  EXPECT_LT(checkpoint_record_key(9, 7), checkpoint_record_key(10, 0));
  EXPECT_LT(checkpoint_record_key(10, 2), checkpoint_record_key(10, 11));
  auto one = checkpoint_record_key(10, 1);
  EXPECT_NE(checkpoint_record_key(10, 10).rfind(one, 0), 0u);
}

TEST(checkpoint_record, the_jobs_checkpoint_is_the_highest_step_over_every_ranks_shard) {
  std::map<std::string, std::string> records;
  put(records, 0, shard(8, "/ck/step-8", 100, 9.0, {{"directory", 9.0}}));
  put(records, 0, shard(12, "/ck/step-12", 100, 0.5, {{"memory", 0.1}, {"directory", 0.4}}));
  put(records, 1, shard(12, "/ck/step-12", 150, 0.75, {{"memory", 0.2}, {"directory", 0.3}}));
  put(records, 2, shard(12, "/ck/step-12", 200, 0.25, {{"directory", 0.6}, {"peer", 0.1}}));
  auto job = job_checkpoint(records);
  EXPECT_EQ(job.step(), 12);
  EXPECT_EQ(job.path(), "/ck/step-12");
  EXPECT_EQ(job.bytes(), 450);
  EXPECT_EQ(job.seconds(), 0.75);
  // Only the directory holds every rank's shard; its slowest rank took 0.6 s.
  ASSERT_EQ(job.tiers_size(), 1);
  EXPECT_EQ(job.tiers(0).name(), "directory");
  EXPECT_EQ(job.tiers(0).seconds(), 0.6);
}

TEST(checkpoint_record, the_path_is_the_lowest_recording_ranks) {
  std::map<std::string, std::string> records;
  put(records, 3, shard(5, "/shm/rank-3/step-5", 10, 0.1, {{"memory", 0.1}}));
  put(records, 1, shard(5, "/shm/rank-1/step-5", 10, 0.1, {{"memory", 0.1}}));
  auto job = job_checkpoint(records);
  EXPECT_EQ(job.path(), "/shm/rank-1/step-5");
  EXPECT_EQ(job.bytes(), 20);
}

TEST(checkpoint_record, unreadable_or_pathless_records_are_passed_over) {
  std::map<std::string, std::string> records;
  EXPECT_EQ(job_checkpoint(records).path(), "");
  put(records, 0, shard(3, "/ck/step-3", 7, 0.1));
  records[checkpoint_record_key(9, 0)] = "\xff not a record";
  put(records, 1, shard(9, "", 7, 0.1));
  auto job = job_checkpoint(records);
  EXPECT_EQ(job.step(), 3);
  EXPECT_EQ(job.bytes(), 7);
}

// A checkpoint that reached the directory after it was recorded (it was in
// memory only) is recorded again with that tier, unless a later save's
// record took its place or the tier is named already.
TEST(checkpoint_record, a_tier_is_added_to_the_record_of_its_step_only) {
  auto restored = shard(20, "/shm/rank-1/step-20", 10, 0, {{"memory", 0}});
  auto both = record_with_tier(restored, 20, "directory");
  ASSERT_TRUE(both);
  ASSERT_EQ(both->tiers_size(), 2);
  EXPECT_EQ(both->tiers(0).name(), "memory");
  EXPECT_EQ(both->tiers(1).name(), "directory");
  EXPECT_EQ(both->tiers(1).seconds(), 0);
  EXPECT_EQ(both->path(), restored.path());
  EXPECT_FALSE(record_with_tier(*both, 20, "directory"));
  EXPECT_FALSE(record_with_tier(restored, 25, "directory"));
  EXPECT_FALSE(record_with_tier(wire::CheckpointInfo{}, 0, "directory"));
}

using keys = std::vector<std::string>;

// Each record in erases the one before it, so one stays per worker.
TEST(checkpoint_record, a_record_in_replaces_the_one_before) {
  record_keys records;
  EXPECT_EQ(records.current(), "");
  EXPECT_EQ(records.inserted("k10"), keys{});
  EXPECT_EQ(records.current(), "k10");
  EXPECT_EQ(records.inserted("k20"), keys{"k10"});
  EXPECT_EQ(records.current(), "k20");
  // The same step recorded again (its tiers replaced) erases nothing.
  EXPECT_EQ(records.inserted("k20"), keys{});
}

// An insert whose answer timed out may land later; it is erased with the
// next record in, together with the one before it, and never again.
TEST(checkpoint_record, a_failed_insert_is_erased_with_the_next_record_in) {
  record_keys records;
  records.inserted("k10");
  records.may_be_there("k20");
  EXPECT_EQ(records.current(), "k10");
  EXPECT_EQ(records.inserted("k30"), (keys{"k10", "k20"}));
  EXPECT_EQ(records.inserted("k40"), keys{"k30"});
}

// A failed erasure leaves its record, tried again with the next record in;
// the current record is never among the keys to erase.
TEST(checkpoint_record, a_failed_erasure_is_tried_again_and_the_current_record_kept) {
  record_keys records;
  records.inserted("k10");
  ASSERT_EQ(records.inserted("k20"), keys{"k10"});
  records.may_be_there("k10");
  records.may_be_there("k20");
  EXPECT_EQ(records.inserted("k30"), (keys{"k10", "k20"}));
  records.may_be_there("k40");
  EXPECT_EQ(records.inserted("k40"), keys{"k30"});
}

}  // namespace
