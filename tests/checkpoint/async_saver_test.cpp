#include "checkpoint/async_saver.hpp"

#include <fcntl.h>
#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "checkpoint/layout.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/faulty_file_system.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/checkpoint/worker_state.hpp"

namespace lifeboat::checkpoint {
namespace {

using testing::worker_state;

constexpr std::size_t state_bytes = 1 << 20;
constexpr auto long_wait = std::chrono::seconds{30};

// A barrier the test holds closed until it opens it.
class gated_barrier : public barrier {
 public:
  caf::error arrive_and_wait(const std::string& name, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock{mtx_};
    arrived_.insert(name);
    cv_.notify_all();
    if (!cv_.wait_for(lock, timeout, [this] { return open_; }))
      return make_error(errc::timeout, name);
    return {};
  }

  bool await_arrival(const std::string& name) {
    std::unique_lock<std::mutex> lock{mtx_};
    return cv_.wait_for(lock, long_wait, [&] { return arrived_.count(name) > 0; });
  }

  void open() {
    std::lock_guard<std::mutex> guard{mtx_};
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mtx_;
  std::condition_variable cv_;
  std::set<std::string> arrived_;
  bool open_ = false;
};

std::string this_thread_name() {
  char name[16] = {};
  ::pthread_getname_np(::pthread_self(), name, sizeof(name));
  return name;
}

// Collects the outcomes reported to the completion callbacks.
struct outcomes {
  std::mutex mtx;
  std::vector<caf::expected<checkpoint_info>> results;

  save_callback callback() {
    return [this](const caf::expected<checkpoint_info>& r) {
      std::lock_guard<std::mutex> guard{mtx};
      results.push_back(r);
    };
  }
};

class async_saver_test : public ::testing::Test {
 protected:
  store open_store(int world_size = 1) {
    auto st = store::open({dir_.path(), 0, world_size});
    EXPECT_TRUE(st);
    return std::move(*st);
  }

  testing::temp_dir dir_;
  worker_state state_{state_bytes};
  outcomes outcomes_;
};

TEST_F(async_saver_test, save_returns_before_the_shard_is_committed) {
  auto st = open_store();
  gated_barrier gate;
  async_saver saver{st, &gate, long_wait};
  state_.set(1);
  ASSERT_FALSE(saver.save(state_.registry, 1, 11, outcomes_.callback()));
  // The training thread may change its state at once: the save has its copy.
  state_.set(99);
  ASSERT_TRUE(gate.await_arrival("checkpoint-shards-1"));
  EXPECT_TRUE(saver.busy());
  EXPECT_EQ(saver.wait(std::chrono::milliseconds{1}), make_error(errc::timeout));
  EXPECT_FALSE(testing::exists(st.step_path(1) + "/" + manifest_file_name));
  gate.open();
  ASSERT_FALSE(saver.wait(long_wait));
  ASSERT_EQ(outcomes_.results.size(), 1u);
  ASSERT_TRUE(outcomes_.results[0]);
  EXPECT_EQ(outcomes_.results[0]->step, 1);
  EXPECT_EQ(outcomes_.results[0]->total_run_calls, 11);
  worker_state fresh{state_bytes};
  auto restored = st.restore_latest(fresh.registry);
  ASSERT_TRUE(restored && *restored);
  EXPECT_TRUE(fresh.holds(1));
}

TEST_F(async_saver_test, a_second_save_waits_for_the_first_and_both_commit) {
  auto st = open_store();
  gated_barrier gate;
  async_saver saver{st, &gate, long_wait};
  state_.set(1);
  ASSERT_FALSE(saver.save(state_.registry, 1, 1, outcomes_.callback()));
  ASSERT_TRUE(gate.await_arrival("checkpoint-shards-1"));
  std::thread second{[&] {
    state_.set(2);
    EXPECT_FALSE(saver.save(state_.registry, 2, 2, outcomes_.callback()));
  }};
  gate.open();
  second.join();
  ASSERT_FALSE(saver.wait(long_wait));
  ASSERT_EQ(outcomes_.results.size(), 2u);
  EXPECT_EQ(outcomes_.results[0]->step, 1);
  EXPECT_EQ(outcomes_.results[1]->step, 2);
  worker_state fresh{state_bytes};
  ASSERT_TRUE(st.restore_latest(fresh.registry, 1));
  EXPECT_TRUE(fresh.holds(1));
  ASSERT_TRUE(st.restore_latest(fresh.registry));
  EXPECT_TRUE(fresh.holds(2));
  // The second save reused the staging memory of the first.
  EXPECT_EQ(st.pool().allocations(), 1u);
}

TEST_F(async_saver_test, a_failed_save_is_reported_and_the_previous_checkpoint_kept) {
  auto st = open_store();
  async_saver saver{st, nullptr};
  state_.set(1);
  ASSERT_FALSE(saver.save(state_.registry, 1, 1, outcomes_.callback()));
  ASSERT_FALSE(saver.wait(long_wait));
  // A regular file where step 2's directory must go.
  testing::write_file(st.step_path(2), "in the way");
  state_.set(2);
  ::testing::internal::CaptureStderr();
  ASSERT_FALSE(saver.save(state_.registry, 2, 2, outcomes_.callback()));
  ASSERT_FALSE(saver.wait(long_wait));
  auto log = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(outcomes_.results.size(), 2u);
  ASSERT_FALSE(outcomes_.results[1]);
  EXPECT_EQ(outcomes_.results[1].error(), make_error(errc::io_error));
  EXPECT_NE(describe(outcomes_.results[1].error()).find(st.step_path(2)), std::string::npos);
  EXPECT_NE(log.find("checkpoint of step 2 failed"), std::string::npos) << log;
  worker_state fresh{state_bytes};
  auto restored = st.restore_latest(fresh.registry);
  ASSERT_TRUE(restored && *restored);
  EXPECT_TRUE(fresh.holds(1));
}

TEST_F(async_saver_test, several_workers_need_a_barrier) {
  auto st = open_store(2);
  async_saver saver{st, nullptr};
  ASSERT_FALSE(saver.save(state_.registry, 1, 1, outcomes_.callback()));
  ASSERT_FALSE(saver.wait(long_wait));
  ASSERT_EQ(outcomes_.results.size(), 1u);
  EXPECT_EQ(outcomes_.results[0].error(), make_error(errc::invalid_config));
}

// Background work runs on the I/O thread without holding the caller up; a
// save, wait() and busy() wait for it as for a save in flight.
TEST_F(async_saver_test, a_save_waits_for_background_work_that_ran_on_the_saver_thread) {
  auto st = open_store();
  async_saver saver{st, nullptr};
  std::mutex mtx;
  std::condition_variable cv;
  bool release = false;
  std::string thread_name;
  saver.run_in_background([&] {
    std::unique_lock<std::mutex> lock{mtx};
    thread_name = this_thread_name();
    cv.wait(lock, [&] { return release; });
  });
  EXPECT_TRUE(saver.busy());
  auto err = saver.wait(std::chrono::milliseconds{50});
  EXPECT_EQ(err, make_error(errc::timeout));
  EXPECT_NE(describe(err).find("background work of the saver still running"), std::string::npos)
      << describe(err);
  std::thread saving{[&] {
    state_.set(1);
    EXPECT_FALSE(saver.save(state_.registry, 1, 1, outcomes_.callback()));
  }};
  {
    std::lock_guard<std::mutex> guard{mtx};
    release = true;
  }
  cv.notify_all();
  saving.join();
  ASSERT_FALSE(saver.wait(long_wait));
  EXPECT_FALSE(saver.busy());
  EXPECT_EQ(thread_name, saver_thread_name);
  ASSERT_EQ(outcomes_.results.size(), 1u);
  EXPECT_TRUE(outcomes_.results[0]);
}

// The checkpoint directory's file system, which tells when the first file
// of a step is opened for writing.
class observed_file_system final : public file_system {
 public:
  int open(const std::string& path, int flags, mode_t mode) override {
    if ((flags & (O_WRONLY | O_RDWR)) != 0 && path.find("/step-") != std::string::npos) {
      std::lock_guard<std::mutex> guard{mtx_};
      writing_ = true;
      cv_.notify_all();
    }
    return posix_file_system()->open(path, flags, mode);
  }
  ssize_t pwrite(int fd, const char* data, size_t size, off_t offset) override {
    return posix_file_system()->pwrite(fd, data, size, offset);
  }
  int fsync(int fd) override { return posix_file_system()->fsync(fd); }
  int rename(const std::string& from, const std::string& to) override {
    return posix_file_system()->rename(from, to);
  }
  int mkdir(const std::string& path, mode_t mode) override {
    return posix_file_system()->mkdir(path, mode);
  }
  int unlink(const std::string& path) override { return posix_file_system()->unlink(path); }
  int ftruncate(int fd, off_t length) override {
    return posix_file_system()->ftruncate(fd, length);
  }
  int fallocate(int fd, off_t length) override {
    return posix_file_system()->fallocate(fd, length);
  }

  bool await_writing(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock{mtx_};
    return cv_.wait_for(lock, timeout, [this] { return writing_; });
  }

  // Forgets the writes seen so far.
  void reset() {
    std::lock_guard<std::mutex> guard{mtx_};
    writing_ = false;
  }

 private:
  std::mutex mtx_;
  std::condition_variable cv_;
  bool writing_ = false;
};

// A barrier that notes each arrival and lets it through.
struct recording_barrier final : barrier {
  caf::error arrive_and_wait(const std::string& name, std::chrono::milliseconds) override {
    on_arrival(name);
    return {};
  }
  std::function<void(const std::string&)> on_arrival;
};

// A save copies to the peer first, alone, before it writes the directory;
// a final save without a deadline copies beside the directory write: its
// copy waits until that write began, which in sequence it would wait for in
// vain. Either way the rank reaches the shards' barrier only after its copy
// ended (a rank leaves after the commit, and with it the listener that keeps
// a peer's replica).
TEST_F(async_saver_test, a_final_save_copies_to_the_peer_beside_the_directory_write) {
  auto files = std::make_shared<observed_file_system>();
  store_config cfg{dir_.path(), 0, 1};
  cfg.files = files;
  auto st = store::open(cfg);
  ASSERT_TRUE(st);
  testing::temp_dir memory_dir;
  auto memory = memory_tier::open(memory_dir.path(), 0, 1);
  ASSERT_TRUE(memory);
  std::atomic<bool> copied{false};
  std::vector<bool> directory_begun_at_copy;
  replicate_fn replicate = [&](int64_t step, int64_t, std::string_view) -> caf::expected<double> {
    // The final save (step 2) waits for the directory's write; the other
    // only looks.
    auto begun = files->await_writing(step == 2 ? std::chrono::milliseconds{10000}
                                                : std::chrono::milliseconds{0});
    directory_begun_at_copy.push_back(begun);
    files->reset();
    copied = true;
    return 0.5;
  };
  std::vector<std::string> copied_at_arrival;
  recording_barrier ready;
  ready.on_arrival = [&](const std::string& name) {
    copied_at_arrival.push_back(name + (copied ? ": copied" : ": not copied"));
    copied = false;
  };
  {
    async_saver saver{*st, &ready, long_wait, {&*memory, nullptr, replicate, nullptr}};
    for (int64_t step : {1, 2}) {
      state_.set(step);
      ASSERT_FALSE(
          saver.save(state_.registry, step, step, outcomes_.callback(), {0, false, step == 2}));
      ASSERT_FALSE(saver.wait(long_wait));
    }
  }
  EXPECT_EQ(directory_begun_at_copy, (std::vector<bool>{false, true}));
  ASSERT_EQ(outcomes_.results.size(), 2u);
  for (auto& result : outcomes_.results) {
    ASSERT_TRUE(result) << describe(result.error());
    ASSERT_EQ(result->tiers.size(), 3u);
    EXPECT_EQ(result->tiers[1].name, tier_peer);
    EXPECT_EQ(result->tiers[2].name, tier_directory);
  }
  EXPECT_EQ(copied_at_arrival,
            (std::vector<std::string>{
                "checkpoint-shards-1: copied", "checkpoint-committed-1: not copied",
                "checkpoint-shards-2: copied", "checkpoint-committed-2: not copied"}));
}

// The next shard's files are allocated after a save that wrote the memory
// tier, on the saver's thread and before wait() returns; not after the final
// save (the workers exit) nor after one that wrote the directory only.
TEST_F(async_saver_test, the_next_shards_files_are_prepared_after_every_save_but_the_last) {
  auto st = open_store();
  testing::temp_dir memory_dir;
  auto memory = memory_tier::open(memory_dir.path(), 0, 1);
  ASSERT_TRUE(memory);
  std::vector<std::string> prepared_on;
  auto prepare = [&] { prepared_on.push_back(this_thread_name()); };
  {
    async_saver saver{st, nullptr, long_wait, {&*memory, nullptr, nullptr, prepare}};
    for (int64_t step : {1, 2}) {
      state_.set(step);
      ASSERT_FALSE(saver.save(state_.registry, step, step, outcomes_.callback()));
      ASSERT_FALSE(saver.wait(long_wait));
      EXPECT_EQ(prepared_on.size(), static_cast<size_t>(step));
    }
    state_.set(3);
    ASSERT_FALSE(saver.save(state_.registry, 3, 3, outcomes_.callback(), {0, false, true}));
    ASSERT_FALSE(saver.wait(long_wait));
    state_.set(4);
    ASSERT_FALSE(saver.save(state_.registry, 4, 4, outcomes_.callback(), {0, true, false}));
    ASSERT_FALSE(saver.wait(long_wait));
  }
  EXPECT_EQ(prepared_on, (std::vector<std::string>{saver_thread_name, saver_thread_name}));
  ASSERT_EQ(outcomes_.results.size(), 4u);
  for (auto& result : outcomes_.results) EXPECT_TRUE(result) << describe(result.error());
}

// A directory whose every write takes write_delay (through the file-system
// seam) and a memory tier beside it: a final save whose directory write
// would end after the deadline commits in memory only, and a later
// directory_only save persists the same bytes to the directory.
class async_saver_deadline_test : public async_saver_test {
 protected:
  static constexpr auto write_delay = std::chrono::milliseconds{300};

  void SetUp() override {
    auto files = std::make_shared<testing::faulty_file_system>();
    files->delay_writes(dir_.path() + "/*", write_delay);
    store_config cfg{dir_.path(), 0, 1};
    cfg.files = files;
    auto st = store::open(cfg);
    ASSERT_TRUE(st);
    directory_.emplace(std::move(*st));
    auto tier = memory_tier::open(memory_dir_.path(), 0, 1);
    ASSERT_TRUE(tier);
    memory_.emplace(std::move(*tier));
  }

  static int64_t unix_ms_in(std::chrono::milliseconds from_now) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               (std::chrono::system_clock::now() + from_now).time_since_epoch())
        .count();
  }

  // Saves the state of `step` and waits until the save ended.
  void save_and_wait(async_saver& saver, int64_t step, save_options options = {}) {
    state_.set(step);
    ASSERT_FALSE(saver.save(state_.registry, step, step, outcomes_.callback(), options));
    ASSERT_FALSE(saver.wait(long_wait));
  }

  testing::temp_dir memory_dir_;
  std::optional<store> directory_;
  std::optional<memory_tier> memory_;
};

TEST_F(async_saver_deadline_test, a_directory_too_slow_for_the_deadline_is_left_to_the_next_start) {
  async_saver saver{*directory_, nullptr, long_wait, {&*memory_, nullptr, nullptr, nullptr}};
  // The first save measures the directory's bandwidth: 1 MiB in two delayed
  // writes (data and index), 600 ms.
  save_and_wait(saver, 1);
  // The final save: the reserve leaves 200 ms before the deadline, too few.
  ::testing::internal::CaptureStderr();
  save_and_wait(saver, 2,
                {unix_ms_in(std::chrono::milliseconds{deadline_reserve_ms} + write_delay * 2 / 3)});
  auto log = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(outcomes_.results.size(), 2u);
  ASSERT_TRUE(outcomes_.results[1]) << describe(outcomes_.results[1].error());
  ASSERT_EQ(outcomes_.results[1]->tiers.size(), 1u);
  EXPECT_EQ(outcomes_.results[1]->tiers[0].name, tier_memory);
  EXPECT_NE(log.find("checkpoint of step 2 committed in memory only"), std::string::npos) << log;
  EXPECT_EQ(directory_->newest_committed_step(std::nullopt), 1);
  EXPECT_EQ(memory_->newest_step(std::nullopt), 2);
  // The next start persists what it restored from memory.
  worker_state restored{state_bytes};
  bool touched = false;
  ASSERT_TRUE(memory_->restore_step(2, restored.registry, touched));
  ASSERT_FALSE(saver.save(restored.registry, 2, 2, outcomes_.callback(), {0, true}));
  ASSERT_FALSE(saver.wait(long_wait));
  ASSERT_EQ(outcomes_.results.size(), 3u);
  ASSERT_TRUE(outcomes_.results[2]) << describe(outcomes_.results[2].error());
  worker_state fresh{state_bytes};
  auto from_directory = directory_->restore_latest(fresh.registry);
  ASSERT_TRUE(from_directory && *from_directory);
  EXPECT_EQ((*from_directory)->step, 2);
  EXPECT_TRUE(fresh.holds(2));
}

TEST_F(async_saver_deadline_test, a_directory_that_fits_the_deadline_gets_the_final_save) {
  async_saver saver{*directory_, nullptr, long_wait, {&*memory_, nullptr, nullptr, nullptr}};
  save_and_wait(saver, 1);
  save_and_wait(saver, 2, {unix_ms_in(std::chrono::seconds{60})});
  ASSERT_EQ(outcomes_.results.size(), 2u);
  ASSERT_TRUE(outcomes_.results[1]);
  ASSERT_EQ(outcomes_.results[1]->tiers.size(), 2u);
  EXPECT_EQ(outcomes_.results[1]->tiers[1].name, tier_directory);
  EXPECT_EQ(directory_->newest_committed_step(std::nullopt), 2);
}

// The peer tier's copies as the saver sees them: each "takes" 5 s (told,
// not slept), so the rate is the shard's size in 5 s.
TEST_F(async_saver_deadline_test, a_final_save_copies_to_the_peer_only_when_the_copy_ends_in_time) {
  std::vector<int64_t> copied;
  replicate_fn replicate = [&](int64_t step, int64_t, std::string_view) -> caf::expected<double> {
    copied.push_back(step);
    return 5.0;
  };
  async_saver saver{*directory_, nullptr, long_wait, {&*memory_, nullptr, replicate, nullptr}};
  save_and_wait(saver, 1);
  // 60 s left: the copy (about 5 s) ends in time.
  save_and_wait(saver, 2, {unix_ms_in(std::chrono::seconds{60})});
  // 3 s left: it would not; the memory tier and the directory still get it.
  ::testing::internal::CaptureStderr();
  save_and_wait(saver, 3, {unix_ms_in(std::chrono::seconds{3})});
  auto log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(copied, (std::vector<int64_t>{1, 2}));
  ASSERT_EQ(outcomes_.results.size(), 3u);
  ASSERT_TRUE(outcomes_.results[1]);
  EXPECT_EQ(outcomes_.results[1]->tiers.at(1).name, tier_peer);
  ASSERT_TRUE(outcomes_.results[2]);
  EXPECT_EQ(outcomes_.results[2]->tiers.at(0).name, tier_memory);
  EXPECT_NE(outcomes_.results[2]->tiers.at(1).name, tier_peer);
  EXPECT_NE(
      log.find("peer tier: checkpoint of step 3 not replicated: the copy would take about 5 s"),
      std::string::npos)
      << log;
}

// Two ranks in this process meet here, as the coordination service lets
// workers meet: the checkpoint-ready barrier and the tier agreement.
class meeting {
 public:
  caf::expected<std::vector<std::string>> meet(const std::string& key, int rank, std::string said,
                                               std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock{mtx_};
    auto& slots = said_[key];
    slots.resize(2);
    slots[static_cast<size_t>(rank)] = std::move(said);
    ++arrived_[key];
    cv_.notify_all();
    if (!cv_.wait_for(lock, timeout, [&] { return arrived_[key] == 2; }))
      return make_error(errc::timeout, key);
    return said_[key];
  }

 private:
  std::mutex mtx_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<std::string>> said_;
  std::map<std::string, int> arrived_;
};

class meeting_barrier : public barrier {
 public:
  meeting_barrier(meeting& m, int rank) : meeting_(m), rank_(rank) {}

  caf::error arrive_and_wait(const std::string& name, std::chrono::milliseconds timeout) override {
    auto met = meeting_.meet(name, rank_, {}, timeout);
    return met ? caf::error{} : met.error();
  }

 private:
  meeting& meeting_;
  int rank_;
};

// Two ranks of one job saving together; rank 1's checkpoint directory is
// full (every write fails with ENOSPC, through the file-system seam).
class async_saver_full_disk_test : public async_saver_test {
 protected:
  // Far below long_wait: a rank left waiting for its peer fails with
  // errc::timeout, not with what the test expects.
  static constexpr auto barrier_timeout = std::chrono::seconds{5};

  struct rank_parts {
    std::optional<store> directory;
    testing::temp_dir memory_dir;
    std::optional<memory_tier> memory;
    worker_state state{state_bytes};
    outcomes done;
  };

  void SetUp() override {
    for (int r = 0; r < 2; ++r) {
      store_config cfg{dir_.path(), r, 2};
      if (r == 1) {
        auto files = std::make_shared<testing::faulty_file_system>();
        files->fail(testing::faulty_file_system::call::pwrite, dir_.path() + "/*", ENOSPC);
        cfg.files = files;
      }
      auto st = store::open(cfg);
      ASSERT_TRUE(st);
      ranks_[r].directory.emplace(std::move(*st));
      auto tier = memory_tier::open(ranks_[r].memory_dir.path(), r, 2);
      ASSERT_TRUE(tier);
      ranks_[r].memory.emplace(std::move(*tier));
    }
  }

  // Both ranks save `step` (directory only: `persist`) and wait for it.
  void save_both(int64_t step, bool persist) {
    meeting met;
    std::vector<std::unique_ptr<meeting_barrier>> barriers;
    std::vector<std::unique_ptr<async_saver>> savers;
    for (int r = 0; r < 2; ++r) {
      auto& part = ranks_[r];
      barriers.push_back(std::make_unique<meeting_barrier>(met, r));
      tier_vote_exchange exchange = [&met, r](const std::string& round, int64_t s,
                                              const std::string& said,
                                              std::chrono::milliseconds timeout) {
        return met.meet(round + "/" + std::to_string(s), r, said, timeout);
      };
      savers.push_back(
          std::make_unique<async_saver>(*part.directory, barriers.back().get(), barrier_timeout,
                                        saver_tiers{&*part.memory, exchange, nullptr, nullptr}));
      part.state.set(testing::worker_seed(r, step));
      save_options options;
      options.directory_only = persist;
      ASSERT_FALSE(
          savers.back()->save(part.state.registry, step, step, part.done.callback(), options));
    }
    for (auto& saver : savers) ASSERT_FALSE(saver->wait(long_wait));
  }

  rank_parts ranks_[2];
};

// A full disk on one rank no longer fails the job's save: every rank holds
// its shard in memory, so the save commits there on every rank, as a final
// save too slow for the directory does.
TEST_F(async_saver_full_disk_test, a_write_failed_on_one_rank_commits_in_memory_on_every_rank) {
  ::testing::internal::CaptureStderr();
  save_both(1, false);
  auto log = ::testing::internal::GetCapturedStderr();
  for (auto& part : ranks_) {
    ASSERT_EQ(part.done.results.size(), 1u);
    auto& result = part.done.results[0];
    ASSERT_TRUE(result) << describe(result.error()) << log;
    ASSERT_EQ(result->tiers.size(), 1u);
    EXPECT_EQ(result->tiers[0].name, tier_memory);
    EXPECT_EQ(part.memory->newest_step(std::nullopt), 1);
    EXPECT_FALSE(part.directory->newest_committed_step(std::nullopt));
  }
  EXPECT_NE(log.find("checkpoint of step 1 committed in memory only: rank 1's directory write "
                     "failed (io_error: "),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("No space left on device"), std::string::npos) << log;
}

// The next start's write of a checkpoint held in memory only reports no
// failure to the coordination service: rank 0 must not wait for rank 1 at
// the shards' barrier, but learn at once that rank 1's write failed.
TEST_F(async_saver_full_disk_test, a_directory_only_write_failed_on_one_rank_fails_on_every_rank) {
  ::testing::internal::CaptureStderr();
  save_both(1, true);
  auto log = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(ranks_[0].done.results.size(), 1u);
  ASSERT_EQ(ranks_[1].done.results.size(), 1u);
  auto& peer = ranks_[0].done.results[0];
  auto& own = ranks_[1].done.results[0];
  ASSERT_FALSE(own);
  EXPECT_EQ(own.error(), make_error(errc::io_error)) << describe(own.error());
  ASSERT_FALSE(peer);
  EXPECT_EQ(peer.error(), make_error(errc::peer_error)) << describe(peer.error());
  EXPECT_NE(describe(peer.error()).find("rank 1's directory write failed: io_error: "),
            std::string::npos)
      << describe(peer.error());
  EXPECT_FALSE(ranks_[0].directory->newest_committed_step(std::nullopt));
}

}  // namespace
}  // namespace lifeboat::checkpoint
