// Four worker processes save their shards of one step through a real barrier
// over pipes; the manifest appears only once all four shards are durable.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "checkpoint/layout.hpp"
#include "checkpoint/store.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/pipe_barrier.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/checkpoint/worker_state.hpp"
#include "tests/support/build_tree.hpp"

namespace lifeboat::checkpoint {
namespace {

constexpr int world = 4;
constexpr int delayed_rank = 3;
constexpr int64_t step = 7;
constexpr std::size_t state_bytes = 1 << 20;
constexpr auto timeout = std::chrono::seconds{30};
const std::string shards_barrier = "checkpoint-shards-" + std::to_string(step);
const std::string commit_barrier = "checkpoint-committed-" + std::to_string(step);

TEST(store_multiprocess, the_manifest_appears_only_after_every_shard_is_durable) {
  testing::temp_dir dir;
  std::vector<pid_t> pids;
  std::vector<testing::pipe_barrier_hub::worker_pipes> pipes;
  for (int rank = 0; rank < world; ++rank) {
    int to_worker[2], from_worker[2];
    ASSERT_EQ(::pipe2(to_worker, O_CLOEXEC), 0);
    ASSERT_EQ(::pipe2(from_worker, O_CLOEXEC), 0);
    pids.push_back(
        testing::spawn({lifeboat::test::built(LIFEBOAT_CHECKPOINT_WORKER), "shard-worker",
                        dir.path(), std::to_string(rank), std::to_string(world),
                        std::to_string(step), std::to_string(state_bytes)},
                       {to_worker[0], from_worker[1]}));
    ::close(to_worker[0]);
    ::close(from_worker[1]);
    pipes.push_back({from_worker[0], to_worker[1]});
  }
  testing::pipe_barrier_hub hub{pipes};
  auto step_dir = dir.path() + "/" + step_dir_name(step);
  auto manifest = step_dir + "/" + manifest_file_name;

  // Everyone but the delayed rank writes its shard and waits at the barrier.
  for (int rank = 0; rank < world; ++rank)
    if (rank != delayed_rank) hub.start(rank);
  for (int rank = 0; rank < world; ++rank) {
    if (rank == delayed_rank) continue;
    ASSERT_TRUE(hub.await_arrival(rank, shards_barrier, timeout)) << "rank " << rank;
    EXPECT_TRUE(testing::exists(step_dir + "/" + shard_index_name(rank, world)));
  }
  EXPECT_FALSE(testing::exists(step_dir + "/" + shard_data_name(delayed_rank, world)));
  EXPECT_FALSE(testing::exists(manifest));

  hub.start(delayed_rank);
  ASSERT_TRUE(hub.await_arrival(delayed_rank, shards_barrier, timeout));
  // All four are durable, but nobody has passed the barrier: still no commit.
  EXPECT_FALSE(testing::exists(manifest));
  hub.release(shards_barrier);

  for (int rank = 0; rank < world; ++rank)
    ASSERT_TRUE(hub.await_arrival(rank, commit_barrier, timeout)) << "rank " << rank;
  // Rank 0 arrives at the second barrier only after it committed.
  EXPECT_TRUE(testing::exists(manifest));
  hub.release(commit_barrier);

  for (int rank = 0; rank < world; ++rank) {
    EXPECT_EQ(testing::wait_for(pids[rank]), 0) << "rank " << rank;
    ::close(pipes[rank].from_worker);
    ::close(pipes[rank].to_worker);
  }
  for (int rank = 0; rank < world; ++rank) {
    auto st = store::open({dir.path(), rank, world});
    ASSERT_TRUE(st);
    testing::worker_state fresh{state_bytes};
    auto restored = st->restore_latest(fresh.registry);
    ASSERT_TRUE(restored && *restored) << "rank " << rank;
    EXPECT_EQ((*restored)->step, step);
    EXPECT_TRUE(fresh.holds(testing::worker_seed(rank, step))) << "rank " << rank;
  }
}

}  // namespace
}  // namespace lifeboat::checkpoint
