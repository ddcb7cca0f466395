// Helper processes for the checkpoint tests:
//   crash-writer DIR BYTES
//     restores the latest checkpoint, then saves step after step until killed,
//     printing "committed STEP" after each commit.
//   tiered-crash-writer DIR MEMORY_DIR BYTES
//     the same through both tiers, as a worker saves: each shard to the memory
//     tier in MEMORY_DIR first (into a spare allocated after the save
//     before), then to DIR; restores from the fastest tier.
//   shard-worker DIR RANK WORLD STEP BYTES
//     waits for "start" on descriptor 3, saves one shard through the pipe
//     barrier (descriptors 3 and 4) and exits 0 when the save succeeded.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "checkpoint/async_saver.hpp"
#include "checkpoint/store.hpp"
#include "checkpoint/tiered_restore.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "tests/checkpoint/pipe_barrier.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/checkpoint/worker_state.hpp"

namespace lc = lifeboat::checkpoint;
namespace lt = lifeboat::checkpoint::testing;

namespace {

constexpr int exit_usage = 64;
constexpr int exit_failed = 1;
constexpr auto start_timeout = std::chrono::seconds{30};
constexpr auto save_timeout = std::chrono::seconds{60};

int fail(const std::string& what, const caf::error& err) {
  lifeboat::log(lifeboat::log_level::error, "checkpoint_test_worker", what, ": ",
                lifeboat::describe(err));
  return exit_failed;
}

// Saves step after step after `step` until killed.
int save_until_killed(lc::async_saver& saver, lt::worker_state& state, int64_t step) {
  for (;;) {
    ++step;
    state.set(step);
    auto err =
        saver.save(state.registry, step, step, [](const caf::expected<lc::checkpoint_info>& r) {
          if (r) lt::write_line(STDOUT_FILENO, "committed " + std::to_string(r->step));
        });
    if (err) return fail("save", err);
  }
}

int crash_writer(const std::string& dir, std::size_t bytes) {
  auto st = lc::store::open({dir, 0, 1, lc::default_max_to_keep});
  if (!st) return fail("open", st.error());
  if (auto err = st->remove_partial()) return fail("remove_partial", err);
  lt::worker_state state{bytes};
  auto restored = st->restore_latest(state.registry);
  if (!restored) return fail("restore", restored.error());
  int64_t step = *restored ? (*restored)->step : 0;
  lc::async_saver saver{*st, nullptr};
  return save_until_killed(saver, state, step);
}

int tiered_crash_writer(const std::string& dir, const std::string& memory_dir, std::size_t bytes) {
  auto st = lc::store::open({dir, 0, 1, lc::default_max_to_keep});
  if (!st) return fail("open", st.error());
  if (auto err = st->remove_partial()) return fail("remove_partial", err);
  auto memory = lc::memory_tier::open(memory_dir, 0, 1);
  if (!memory) return fail("open the memory tier", memory.error());
  lt::worker_state state{bytes};
  auto restored = lc::restore_fastest(*st, &*memory, state.registry, std::nullopt);
  if (!restored) return fail("restore", restored.error());
  int64_t step = *restored ? (*restored)->step : 0;
  // Between saves, a spare of the newest shard's size, as a worker's saver
  // allocates one: kills land in its allocation and in saves writing over it.
  auto prepare_next = [&] {
    auto newest = memory->newest_step(std::nullopt);
    std::error_code ec;
    auto size = newest ? std::filesystem::file_size(memory->files_of(*newest).data, ec) : 0;
    if (!ec && size > 0)
      if (auto err = memory->prepare_spare(size)) fail("prepare a spare", err);
  };
  lc::async_saver saver{
      *st, nullptr, lc::default_barrier_timeout, {&*memory, nullptr, nullptr, prepare_next}};
  return save_until_killed(saver, state, step);
}

int shard_worker(const std::string& dir, int rank, int world, int64_t step, std::size_t bytes) {
  lt::pipe_barrier bar{3, 4};
  if (!bar.await_start(start_timeout)) return exit_failed;
  auto st = lc::store::open({dir, rank, world, lc::default_max_to_keep});
  if (!st) return fail("open", st.error());
  lt::worker_state state{bytes};
  state.set(lt::worker_seed(rank, step));
  caf::error outcome;
  {
    lc::async_saver saver{*st, &bar, save_timeout};
    auto err =
        saver.save(state.registry, step, step, [&](const caf::expected<lc::checkpoint_info>& r) {
          if (!r) outcome = r.error();
        });
    if (err) return fail("save", err);
    if (auto err = saver.wait(save_timeout)) return fail("wait", err);
  }
  if (outcome) return fail("save", outcome);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "crash-writer") == 0)
    return crash_writer(argv[2], std::strtoull(argv[3], nullptr, 10));
  if (argc == 5 && std::strcmp(argv[1], "tiered-crash-writer") == 0)
    return tiered_crash_writer(argv[2], argv[3], std::strtoull(argv[4], nullptr, 10));
  if (argc == 7 && std::strcmp(argv[1], "shard-worker") == 0)
    return shard_worker(argv[2], std::atoi(argv[3]), std::atoi(argv[4]),
                        std::strtoll(argv[5], nullptr, 10), std::strtoull(argv[6], nullptr, 10));
  return exit_usage;
}
