// lifeboat-checkpoint on copies of store_test's format fixture (two ranks'
// shards of step 17): its output lines and exit codes.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"
#include "tests/support/build_tree.hpp"

namespace {

using namespace lifeboat::test;
namespace fs = std::filesystem;

constexpr int exit_not_verified = 1;
constexpr int exit_usage = 2;

// What one run printed (stdout and stderr) and its exit code.
struct run_result {
  std::vector<std::string> lines;
  int code = -1;
};

run_result run_tool(const std::vector<std::string>& args) {
  std::vector<std::string> argv{built(LIFEBOAT_CHECKPOINT)};
  argv.insert(argv.end(), args.begin(), args.end());
  child_process run{argv, true};
  output_log log{run};
  log.read_all();
  return {log.lines(), exit_code(run)};
}

class checkpoint_tool_test : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::copy(built("tests/checkpoint/testdata/format-2026-11-25"), dir_.path(),
             fs::copy_options::recursive);
  }

  std::string dir() const { return dir_.path().string(); }
  std::string step_dir() const { return dir() + "/step-000000000017"; }

  scratch_dir dir_{"checkpoint-tool"};
};

TEST_F(checkpoint_tool_test, lists_the_committed_checkpoints) {
  fs::create_directory(dir() + "/step-000000000020");  // a save under way
  auto listed = run_tool({"list", dir()});
  EXPECT_EQ(listed.code, 0);
  EXPECT_EQ(listed.lines,
            std::vector<std::string>{"step=17 world_size=2 total_run_calls=17 bytes=7046 "
                                     "created=2026-11-28T04:12:02Z path=" +
                                     step_dir()});
}

// A committed step whose manifest does not read is listed as such, beside
// the good one, and the exit code says something is wrong.
TEST_F(checkpoint_tool_test, lists_a_step_whose_manifest_does_not_read_as_unreadable) {
  auto bad = dir() + "/step-000000000011";
  fs::create_directory(bad);
  std::ofstream{bad + "/MANIFEST"};
  auto listed = run_tool({"list", dir()});
  EXPECT_EQ(listed.code, exit_not_verified);
  ASSERT_EQ(listed.lines.size(), 2u);
  EXPECT_EQ(listed.lines[0],
            "step=11 unreadable: corrupt: corrupt file " + bad + "/MANIFEST: too short (0 bytes)");
  EXPECT_EQ(listed.lines[1].rfind("step=17 world_size=2 ", 0), 0u) << listed.lines[1];
}

TEST_F(checkpoint_tool_test, verifies_every_ranks_bytes_and_names_a_corrupt_file) {
  auto verified = run_tool({"verify", dir()});
  EXPECT_EQ(verified.code, 0);
  ASSERT_EQ(verified.lines.size(), 1u);
  EXPECT_EQ(verified.lines[0].rfind("step=17 verified: 2 shards, 7046 bytes in ", 0), 0u)
      << verified.lines[0];

  // Rank 1's first data byte, flipped.
  auto data = step_dir() + "/shard-00001-of-00002.data";
  std::fstream file{data, std::ios::in | std::ios::out | std::ios::binary};
  char byte = 0;
  file.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x01);
  file.seekp(0);
  file.write(&byte, 1);
  file.close();
  auto corrupt = run_tool({"verify", dir(), "--step", "17"});
  EXPECT_EQ(corrupt.code, exit_not_verified);
  EXPECT_EQ(corrupt.lines,
            std::vector<std::string>{"step=17 not verified: corrupt: corrupt file " + data +
                                     ": checksum mismatch in chunk 0 (bytes 0..3523)"});
}

TEST_F(checkpoint_tool_test, prints_the_buffers_of_a_ranks_shard) {
  auto rank1 = run_tool({"buffers", dir(), "--rank", "1"});
  EXPECT_EQ(rank1.code, 0);
  EXPECT_EQ(rank1.lines, (std::vector<std::string>{"bytes=3000 kind=host name=model/weights",
                                                   "bytes=500 kind=host name=optimizer/moments",
                                                   "bytes=23 kind=callbacks name=schedule"}));
  auto rank2 = run_tool({"buffers", dir(), "--rank", "2"});
  EXPECT_EQ(rank2.code, exit_not_verified);
  EXPECT_EQ(rank2.lines, std::vector<std::string>{
                             "lifeboat-checkpoint: step 17 was written by 2 workers: rank 2 is "
                             "none of them"});
}

TEST_F(checkpoint_tool_test, says_what_it_cannot_answer) {
  auto absent = run_tool({"list", dir() + "/absent"});
  EXPECT_EQ(absent.code, exit_usage);
  ASSERT_FALSE(absent.lines.empty());
  EXPECT_NE(absent.lines[0].find("No such file or directory"), std::string::npos)
      << absent.lines[0];

  auto other_step = run_tool({"verify", dir(), "--step", "16"});
  EXPECT_EQ(other_step.code, exit_not_verified);
  EXPECT_EQ(other_step.lines,
            std::vector<std::string>{"lifeboat-checkpoint: no committed checkpoint of step 16 in " +
                                     dir()});

  fs::remove(step_dir() + "/MANIFEST");
  auto none = run_tool({"list", dir()});
  EXPECT_EQ(none.code, exit_not_verified);
  EXPECT_EQ(none.lines,
            std::vector<std::string>{"lifeboat-checkpoint: no committed checkpoint in " + dir()});

  // A memory tier's job directory (LIFEBOAT_LOCAL_DIR, /dev/shm/lifeboat-...)
  // holds its ranks' checkpoint directories: named, ordered by rank.
  fs::create_directory(dir() + "/rank-00001-of-00002");
  fs::create_directory(dir() + "/rank-00000-of-00002");
  auto tier = run_tool({"verify", dir()});
  EXPECT_EQ(tier.code, exit_not_verified);
  EXPECT_EQ(tier.lines, std::vector<std::string>{
                            "lifeboat-checkpoint: no committed checkpoint in " + dir() +
                            ": it is a memory tier's directory, with a checkpoint directory per "
                            "rank: " +
                            dir() + "/rank-00000-of-00002, " + dir() + "/rank-00001-of-00002"});

  auto misused = run_tool({"list", dir(), "--step", "17"});
  EXPECT_EQ(misused.code, exit_usage);
  ASSERT_FALSE(misused.lines.empty());
  EXPECT_EQ(misused.lines[0], "lifeboat-checkpoint: list takes no --step");
}

}  // namespace
