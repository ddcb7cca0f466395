// The restore agreement with a corrupt newest shard on one rank only: that
// rank falls back to the checkpoint before, every rank restores that one step,
// and training finishes with the digests of an uninterrupted run. Before the
// fix a rank already at the common step left the agreement after its first
// round while the rank that fell back published in a second round that nobody
// joined, and both waited until the 120 s bound. Each rank in turn is the
// corrupt one, with 2 and 4 workers, under lifeboat-launch and with rank 0
// hosting the service (no launcher).

#include <signal.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "checkpoint/layout.hpp"
#include "tests/apps/app_test_support.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/loopback_port.hpp"

namespace {

namespace fs = std::filesystem;
using namespace lifeboat::test;

constexpr int64_t steps = 200;
const std::map<std::string, std::string> hermetic_env{{"LIFEBOAT_PLATFORM", "generic"}};

std::vector<std::string> restore_worker(const std::string& ckpt) {
  return demo_command(lifeboat::test::built(LIFEBOAT_DEMO), ckpt, steps, 5);
}

// One run of `workers` demo workers on `ckpt`: under lifeboat-launch, or
// started one by one with rank 0 hosting the coordination service.
class demo_job {
 public:
  demo_job(int workers, bool launcher, const std::string& ckpt) : workers_(workers) {
    if (launcher) {
      std::vector<std::string> argv{lifeboat::test::built(LIFEBOAT_LAUNCH),
                                    "--nproc",
                                    std::to_string(workers),
                                    "--max-restarts",
                                    "0",
                                    "--status-port",
                                    "0",
                                    "--"};
      auto demo = restore_worker(ckpt);
      argv.insert(argv.end(), demo.begin(), demo.end());
      start(argv, environment_with(hermetic_env));
      return;
    }
    auto coordinator = "127.0.0.1:" + std::to_string(unused_port());
    for (int rank = 0; rank < workers; ++rank) {
      auto env = hermetic_env;
      env.insert({{"LIFEBOAT_RANK", std::to_string(rank)},
                  {"LIFEBOAT_WORLD_SIZE", std::to_string(workers)},
                  {"LIFEBOAT_COORDINATOR", coordinator},
                  {"LIFEBOAT_CLUSTER_TOKEN", "restore-agreement-test"},
                  {"LIFEBOAT_STATUS_PORT", "0"}});
      start(restore_worker(ckpt), environment_with(env));
    }
  }

  // Whether every worker is past the handler's construction: its status
  // endpoint listens, and a notice now is saved, not met by the start-up
  // guard (which exits without a checkpoint).
  bool trained_on() {
    if (logs_.size() == 1) return logs_[0]->read_until_count(worker_status_listening, workers_);
    for (auto& log : logs_)
      if (!log->read_until(worker_status_listening)) return false;
    return true;
  }

  // A notice: to the launcher, which forwards it, or to the last rank.
  void preempt() { processes_.back()->kill(SIGTERM); }

  // Every process's exit code, once all output is read.
  std::vector<int> finish() {
    std::vector<int> codes;
    for (size_t i = 0; i < processes_.size(); ++i) {
      logs_[i]->read_all();
      codes.push_back(exit_code(*processes_[i]));
    }
    return codes;
  }

  std::map<int, std::string> digests() const {
    std::map<int, std::string> out;
    for (auto& log : logs_) out.merge(log->digests(steps));
    return out;
  }

  bool contains(const std::string& needle) const {
    for (auto& log : logs_)
      if (log->contains(needle)) return true;
    return false;
  }

  std::string text() const {
    std::string out;
    for (auto& log : logs_) out += log->text();
    return out;
  }

 private:
  void start(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    processes_.push_back(std::make_unique<child_process>(argv, true, env));
    logs_.push_back(std::make_unique<output_log>(*processes_.back()));
  }

  int workers_;
  std::vector<std::unique_ptr<child_process>> processes_;
  std::vector<std::unique_ptr<output_log>> logs_;
};

// Every code equals `expected`.
testing::AssertionResult all_exited(const std::vector<int>& codes, int expected) {
  for (int code : codes)
    if (code != expected)
      return testing::AssertionFailure() << "an exit code was " << code << ", not " << expected;
  return testing::AssertionSuccess();
}

// The newest committed step directory under `ckpt`.
fs::path newest_step(const fs::path& ckpt) {
  fs::path newest;
  for (const auto& entry : fs::directory_iterator(ckpt))
    if (lifeboat::checkpoint::parse_step_dir_name(entry.path().filename().string()) &&
        fs::exists(entry.path() / lifeboat::checkpoint::manifest_file_name) &&
        entry.path() > newest)
      newest = entry.path();
  return newest;
}

void corrupt_newest_shard_of_each_rank_in_turn(int workers, bool launcher) {
  scratch_dir dir{"apps-restore-agreement"};
  auto where = std::to_string(workers) + " workers, " +
               (launcher ? "under lifeboat-launch" : "rank 0 hosting the service") + "\n";
  demo_job reference{workers, launcher, dir / "reference"};
  auto reference_codes = reference.finish();
  ASSERT_TRUE(all_exited(reference_codes, 0)) << where << reference.text();
  auto expected = reference.digests();
  ASSERT_EQ(expected.size(), static_cast<size_t>(workers)) << where << reference.text();

  // Two preemptions: checkpoints of two steps, the second resumed from the first.
  auto preempted = dir / "preempted";
  for (int round = 0; round < 2; ++round) {
    demo_job job{workers, launcher, preempted};
    ASSERT_TRUE(job.trained_on()) << where << job.text();
    job.preempt();
    auto codes = job.finish();
    ASSERT_TRUE(all_exited(codes, restart_exit_code)) << where << job.text();
    ASSERT_TRUE(job.contains("agreed to save")) << where << job.text();
  }
  for (int rank = 0; rank < workers; ++rank) {
    auto ckpt = dir / ("corrupt-rank-" + std::to_string(rank));
    fs::copy(preempted, ckpt, fs::copy_options::recursive);
    auto shard = newest_step(ckpt) / lifeboat::checkpoint::shard_data_name(rank, workers);
    ASSERT_TRUE(lifeboat::checkpoint::testing::flip_byte(shard, fs::file_size(shard) / 2));
    auto what = where + "newest shard of rank " + std::to_string(rank) +
                " corrupt: " + shard.string() + "\n";
    demo_job job{workers, launcher, ckpt};
    auto codes = job.finish();
    EXPECT_TRUE(all_exited(codes, 0)) << what << job.text();
    EXPECT_EQ(job.digests(), expected) << what << job.text();
    EXPECT_TRUE(job.contains("corrupt")) << what << job.text();
    EXPECT_TRUE(job.contains(shard.string())) << what << job.text();
  }
}

TEST(restore_agreement_test, two_workers_under_the_launcher) {
  corrupt_newest_shard_of_each_rank_in_turn(2, true);
}

TEST(restore_agreement_test, four_workers_under_the_launcher) {
  corrupt_newest_shard_of_each_rank_in_turn(4, true);
}

TEST(restore_agreement_test, two_workers_with_rank_0_hosting_the_service) {
  corrupt_newest_shard_of_each_rank_in_turn(2, false);
}

TEST(restore_agreement_test, four_workers_with_rank_0_hosting_the_service) {
  corrupt_newest_shard_of_each_rank_in_turn(4, false);
}

}  // namespace
