#include "checkpoint/verify_checkpoint.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "checkpoint/layout.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/memory_tier.hpp"
#include "checkpoint/shard_writer.hpp"
#include "checkpoint/snapshot.hpp"
#include "checkpoint/state_registry.hpp"
#include "checkpoint/store.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/support/build_tree.hpp"

namespace lifeboat::checkpoint {
namespace {

namespace fs = std::filesystem;
using testing::temp_dir;

constexpr int64_t fixture_step = 17;

// A copy of store_test's format fixture: two ranks' shards of step 17
// (3000 + 500 bytes and callback state each).
void copy_fixture(const temp_dir& dir) {
  fs::copy(test::built("tests/checkpoint/testdata/format-2026-11-25"), dir.path(),
           fs::copy_options::recursive);
}

std::string step_file(const temp_dir& dir, const std::string& name) {
  return dir.sub("step-000000000017/" + name);
}

TEST(verify_checkpoint, reads_every_ranks_shard_and_writes_nothing) {
  temp_dir dir;
  copy_fixture(dir);
  auto before = fs::last_write_time(dir.sub("step-000000000017"));
  auto verified = verify_checkpoint(dir.path(), fixture_step);
  ASSERT_TRUE(verified) << describe(verified.error());
  EXPECT_EQ(verified->manifest.world_size(), 2);
  EXPECT_EQ(verified->manifest.total_run_calls(), 17);
  EXPECT_EQ(verified->bytes, fs::file_size(step_file(dir, "shard-00000-of-00002.data")) +
                                 fs::file_size(step_file(dir, "shard-00001-of-00002.data")));
  EXPECT_EQ(fs::last_write_time(dir.sub("step-000000000017")), before);
}

// Rank 1's shard, which no restore of rank 0 reads, is checked too.
TEST(verify_checkpoint, a_flipped_byte_in_any_ranks_data_names_its_file_and_chunk) {
  temp_dir dir;
  copy_fixture(dir);
  auto data = step_file(dir, "shard-00001-of-00002.data");
  ASSERT_TRUE(testing::flip_byte(data, 10));
  auto verified = verify_checkpoint(dir.path(), fixture_step);
  ASSERT_FALSE(verified);
  EXPECT_EQ(verified.error(), make_error(errc::corrupt));
  EXPECT_NE(describe(verified.error()).find(data + ": checksum mismatch in chunk 0"),
            std::string::npos)
      << describe(verified.error());
}

// The shards are checked side by side; the error is the lowest rank's,
// whichever was found first.
TEST(verify_checkpoint, of_two_corrupt_shards_the_lowest_ranks_is_named) {
  temp_dir dir;
  copy_fixture(dir);
  auto rank0 = step_file(dir, "shard-00000-of-00002.data");
  ASSERT_TRUE(testing::flip_byte(rank0, fs::file_size(rank0) - 1));
  ASSERT_TRUE(testing::flip_byte(step_file(dir, "shard-00001-of-00002.data"), 0));
  auto verified = verify_checkpoint(dir.path(), fixture_step);
  ASSERT_FALSE(verified);
  EXPECT_NE(describe(verified.error()).find(rank0 + ": checksum mismatch"), std::string::npos)
      << describe(verified.error());
}

TEST(verify_checkpoint, a_missing_index_or_an_uncommitted_step_is_named) {
  temp_dir dir;
  copy_fixture(dir);
  auto index = step_file(dir, "shard-00001-of-00002.index");
  fs::remove(index);
  auto verified = verify_checkpoint(dir.path(), fixture_step);
  ASSERT_FALSE(verified);
  EXPECT_EQ(describe(verified.error()), "corrupt: corrupt file " + index + ": missing");

  fs::remove(step_file(dir, "MANIFEST"));
  verified = verify_checkpoint(dir.path(), fixture_step);
  ASSERT_FALSE(verified);
  EXPECT_EQ(verified.error(), make_error(errc::not_found));
  EXPECT_EQ(verify_checkpoint(dir.path(), 3).error(), make_error(errc::not_found));
}

// Beside a running job: the manifest was read, then the job's retention
// removed the step (manifest first, then its files) before every shard was
// checked. The missing files are no corruption; the step is gone.
TEST(verify_checkpoint, a_step_removed_during_the_check_is_not_found_not_corrupt) {
  temp_dir dir;
  copy_fixture(dir);
  auto manifest = read_manifest(dir.sub("step-000000000017"), fixture_step);
  ASSERT_TRUE(manifest) << describe(manifest.error());
  fs::remove(step_file(dir, "MANIFEST"));
  fs::remove_all(dir.sub("step-000000000017"));
  auto verified = verify_shards(dir.path(), fixture_step, *manifest);
  ASSERT_FALSE(verified);
  EXPECT_EQ(verified.error(), make_error(errc::not_found));
  EXPECT_NE(
      describe(verified.error()).find("step 17 in " + dir.path() + " was removed during the check"),
      std::string::npos)
      << describe(verified.error());
}

// Only a step that is gone: the same missing file in a step still
// committed is the checkpoint's fault.
TEST(verify_checkpoint, a_missing_file_of_a_step_still_committed_is_corrupt) {
  temp_dir dir;
  copy_fixture(dir);
  auto manifest = read_manifest(dir.sub("step-000000000017"), fixture_step);
  ASSERT_TRUE(manifest) << describe(manifest.error());
  auto data = step_file(dir, "shard-00001-of-00002.data");
  fs::remove(data);
  auto verified = verify_shards(dir.path(), fixture_step, *manifest);
  ASSERT_FALSE(verified);
  EXPECT_EQ(verified.error(), make_error(errc::corrupt));
  EXPECT_NE(describe(verified.error()).find(data + ": missing"), std::string::npos)
      << describe(verified.error());
}

// Commits `step` in `dir` as a job of one worker would: `saved`, in chunks
// of 1 KiB. Its step directory, empty where a write failed (and the test).
std::string commit_step(const temp_dir& dir, int64_t step, std::vector<char> saved) {
  auto step_dir = dir.sub(step_dir_name(step));
  state_registry saver;
  auto pool = staging_pool::make();
  if (!fs::create_directory(step_dir) || saver.add_host_buffer("w", saved.data(), saved.size()))
    return {};
  auto snap = take_snapshot(saver, *pool);
  if (!snap) return {};
  shard_write_options options;
  options.chunk_size = 1024;
  if (!write_shard_files(step_dir, step, 0, 1, *snap, options) ||
      write_manifest(*posix_file_system(), step_dir, step, 1, step))
    return {};
  return step_dir;
}

// What a running job's retention does to an older step: the manifest
// first, then the rest.
void remove_step(const temp_dir& dir, int64_t step) {
  fs::remove(dir.sub(step_dir_name(step) + "/" + manifest_file_name));
  fs::remove_all(dir.sub(step_dir_name(step)));
}

// One worker's shard of several chunks: where there are more cores than
// shards the shard is checked in parts side by side, and the first bad chunk
// is still the one named, whichever part was checked first.
TEST(verify_checkpoint, a_shard_checked_in_parts_names_its_first_bad_chunk) {
  temp_dir dir;
  constexpr int64_t step = 1;
  auto saved = testing::pattern(16 * 1024, 3);
  auto step_dir = commit_step(dir, step, saved);
  ASSERT_FALSE(step_dir.empty());
  auto verified = verify_checkpoint(dir.path(), step);
  ASSERT_TRUE(verified) << describe(verified.error());
  EXPECT_EQ(verified->bytes, saved.size());

  auto data = step_dir + "/" + shard_data_name(0, 1);
  auto bytes = testing::read_file(data);
  bytes[15 * 1024 + 7] ^= 0x01;  // chunk 15, in the last part
  bytes[3 * 1024 + 7] ^= 0x01;   // chunk 3, in the first
  testing::write_file(data, bytes);
  verified = verify_checkpoint(dir.path(), step);
  ASSERT_FALSE(verified);
  EXPECT_EQ(describe(verified.error()),
            "corrupt: corrupt file " + data + ": checksum mismatch in chunk 3 (bytes 3072..4096)");
}

// The directory as committed_steps_in lists it, the listings counted in
// `listings`. After each, `job` (given the listing's number) acts on the
// directory as a running job would before the check reads it; false: it
// could not (an io_error).
step_listing listing_of(
    const temp_dir& dir, int& listings, std::function<bool(int)> job = [](int) { return true; }) {
  return [&dir, &listings, job]() -> caf::expected<std::vector<int64_t>> {
    auto steps = committed_steps_in(dir.path());
    if (!job(++listings)) return make_error(errc::io_error, "the test's job failed");
    return steps;
  };
}

// Steps 1 and 2 committed in `dir`.
bool commit_two(const temp_dir& dir) {
  return !commit_step(dir, 1, testing::pattern(4096, 1)).empty() &&
         !commit_step(dir, 2, testing::pattern(4096, 2)).empty();
}

TEST(verify_newest, checks_the_newest_committed_step) {
  temp_dir dir;
  ASSERT_TRUE(commit_two(dir));
  int listings = 0;
  auto verified = verify_newest(dir.path(), listing_of(dir, listings));
  ASSERT_TRUE(verified) << describe(verified.error());
  EXPECT_EQ(verified->manifest.step(), 2);
  EXPECT_EQ(verified->bytes, 4096U);
  EXPECT_EQ(listings, 1);

  temp_dir empty;
  verified = verify_newest(empty.path(), listing_of(empty, listings));
  ASSERT_FALSE(verified);
  EXPECT_EQ(describe(verified.error()), "not_found: no committed checkpoint in " + empty.path());

  // A memory tier's directory holds a checkpoint directory per rank: named.
  ASSERT_TRUE(fs::create_directory(empty.sub("rank-00000-of-00001")));
  verified = verify_newest(empty.path(), listing_of(empty, listings));
  ASSERT_FALSE(verified);
  EXPECT_EQ(describe(verified.error()), "not_found: " + none_committed_in(empty.path()));
}

// Right after the listing the job commits step 3 and its retention removes
// step 2, the newest listed: step 3 is the one checked.
TEST(verify_newest, a_newest_removed_by_a_newer_save_checks_the_newer_one) {
  temp_dir dir;
  ASSERT_TRUE(commit_two(dir));
  int listings = 0;
  auto verified = verify_newest(dir.path(), listing_of(dir, listings, [&](int listing) {
                                  if (listing > 1) return true;
                                  remove_step(dir, 2);
                                  return !commit_step(dir, 3, testing::pattern(4096, 3)).empty();
                                }));
  ASSERT_TRUE(verified) << describe(verified.error());
  EXPECT_EQ(verified->manifest.step(), 3);
  EXPECT_EQ(listings, 2);
}

// A newest removed with nothing newer committed was not replaced by a save:
// it is named as removed, and no older step is checked in its place.
TEST(verify_newest, a_newest_removed_without_a_newer_save_is_not_found) {
  temp_dir dir;
  ASSERT_TRUE(commit_two(dir));
  int listings = 0;
  auto verified = verify_newest(dir.path(), listing_of(dir, listings, [&](int listing) {
                                  if (listing == 1) remove_step(dir, 2);
                                  return true;
                                }));
  ASSERT_FALSE(verified);
  EXPECT_EQ(verified.error(), make_error(errc::not_found));
  EXPECT_EQ(listings, 2);
}

// A job that saves faster than a step is checked: the search stops after
// newest_check_attempts checks, each of a step removed meanwhile.
TEST(verify_newest, gives_up_after_its_attempts_beside_a_job_faster_than_the_check) {
  temp_dir dir;
  ASSERT_TRUE(commit_two(dir));
  int listings = 0;
  auto verified =
      verify_newest(dir.path(), listing_of(dir, listings, [&](int listing) {
                      remove_step(dir, listing + 1);
                      return !commit_step(dir, listing + 2, testing::pattern(4096, 7)).empty();
                    }));
  ASSERT_FALSE(verified);
  EXPECT_EQ(verified.error(), make_error(errc::not_found));
  EXPECT_EQ(listings, newest_check_attempts);
}

// A listing that fails is the error.
TEST(verify_newest, a_failed_listing_is_the_error) {
  temp_dir dir;
  auto verified = verify_newest(dir.path(), []() -> caf::expected<std::vector<int64_t>> {
    return make_error(errc::io_error, "cannot list");
  });
  ASSERT_FALSE(verified);
  EXPECT_EQ(describe(verified.error()), "io_error: cannot list");
}

}  // namespace
}  // namespace lifeboat::checkpoint
