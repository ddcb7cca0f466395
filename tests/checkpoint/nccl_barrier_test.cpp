// Needs a GPU: skips with the reason where no CUDA device can be used.
#include "checkpoint/nccl_barrier.hpp"

#include <algorithm>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include <gtest/gtest.h>

#include "checkpoint/device_memory.hpp"
#include "checkpoint/store.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/nccl_ranks.hpp"

namespace lifeboat::checkpoint {
namespace {

using lifeboat::test::child_process;

constexpr auto barrier_timeout = std::chrono::seconds{30};
// A rank's whole run: joining NCCL takes about a second, the rest far less.
constexpr auto rank_timeout = std::chrono::seconds{60};
constexpr std::size_t device_bytes = 1 << 20;

class nccl_barrier_test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto err = device::available()) {
      EXPECT_EQ(nccl_barrier_usable(), make_error(errc::unavailable));
      auto bar = nccl_barrier::split_from(nullptr, barrier_timeout);
      ASSERT_FALSE(bar);
      EXPECT_EQ(bar.error(), make_error(errc::unavailable));
      GTEST_SKIP() << "no usable CUDA device, GPU test skipped: " << describe(err);
    }
  }
};

// One communicator of this process alone.
class nccl_barrier_one_rank_test : public nccl_barrier_test {
 protected:
  void SetUp() override {
    nccl_barrier_test::SetUp();
    if (IsSkipped()) return;
    int dev = 0;
    ASSERT_EQ(ncclCommInitAll(&comm_, 1, &dev), ncclSuccess);
  }

  void TearDown() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }

  ncclComm_t comm_ = nullptr;
};

// The next line a rank wrote for the test, past NCCL's own; nothing at the
// timeout or at the end of its output.
std::optional<std::string> next_line(child_process& rank) {
  for (;;) {
    auto line = rank.read_line(rank_timeout);
    if (!line) return line;
    if (line->rfind(test::rank_line_tag, 0) == 0) return line->substr(test::rank_line_tag.size());
  }
}

std::unique_ptr<child_process> start_rank(int rank, const std::string& id, const char* mode) {
  return std::make_unique<child_process>(std::vector<std::string>{
      lifeboat::test::built(LIFEBOAT_NCCL_BARRIER_WORKER), std::to_string(rank), id, mode});
}

TEST_F(nccl_barrier_one_rank_test, a_single_rank_passes_its_barrier) {
  auto bar = make_nccl_barrier(comm_, barrier_timeout);
  ASSERT_TRUE(bar) << describe(bar.error());
  EXPECT_FALSE((*bar)->arrive_and_wait("checkpoint-shards-1", barrier_timeout));
  EXPECT_FALSE((*bar)->arrive_and_wait("checkpoint-committed-1", barrier_timeout));
}

TEST_F(nccl_barrier_one_rank_test, device_buffers_round_trip_through_the_store) {
  testing::temp_dir dir;
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, device_bytes), cudaSuccess);
  auto saved = testing::pattern(device_bytes, 5);
  ASSERT_EQ(cudaMemcpy(dev, saved.data(), device_bytes, cudaMemcpyHostToDevice), cudaSuccess);
  state_registry reg;
  ASSERT_FALSE(reg.add_device_buffer("dev", dev, device_bytes));
  auto st = store::open({dir.path(), 0, 1});
  ASSERT_TRUE(st);
  auto snap = st->take_snapshot(reg);
  ASSERT_TRUE(snap) << describe(snap.error());
  ASSERT_TRUE(st->write_shard(*snap, 1));
  ASSERT_FALSE(st->commit(1, 1));
  ASSERT_EQ(cudaMemset(dev, 0, device_bytes), cudaSuccess);
  auto restored = st->restore_latest(reg);
  ASSERT_TRUE(restored && *restored);
  std::vector<char> back(device_bytes);
  ASSERT_EQ(cudaMemcpy(back.data(), dev, device_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, saved);
  cudaFree(dev);
}

// A reader of part of a shard (buffer_match::subset, as restore_checkpoint
// reads) takes what one kind of memory saved into the other: a model trained
// on a GPU read into CPU memory for an export, and the other way round.
TEST_F(nccl_barrier_one_rank_test, a_reader_takes_host_saved_bytes_into_device_memory_and_back) {
  testing::temp_dir dir;
  auto saved = testing::pattern(device_bytes, 7);
  auto host = saved;
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, device_bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dev, saved.data(), device_bytes, cudaMemcpyHostToDevice), cudaSuccess);
  // Step 1 from host memory, step 2 from device memory, the same name.
  auto st = store::open({dir.path(), 0, 1});
  ASSERT_TRUE(st);
  for (int64_t step : {1, 2}) {
    state_registry from;
    ASSERT_FALSE(step == 1 ? from.add_host_buffer("weights", host.data(), device_bytes)
                           : from.add_device_buffer("weights", dev, device_bytes));
    auto snap = st->take_snapshot(from);
    ASSERT_TRUE(snap) << describe(snap.error());
    ASSERT_TRUE(st->write_shard(*snap, step));
    ASSERT_FALSE(st->commit(step, step));
  }

  ASSERT_EQ(cudaMemset(dev, 0, device_bytes), cudaSuccess);
  state_registry into_device;
  ASSERT_FALSE(into_device.add_device_buffer("weights", dev, device_bytes));
  bool touched = false;
  auto read = st->restore_step(1, into_device, touched, buffer_match::subset);
  ASSERT_TRUE(read) << describe(read.error());
  std::vector<char> back(device_bytes);
  ASSERT_EQ(cudaMemcpy(back.data(), dev, device_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, saved);

  std::fill(host.begin(), host.end(), 0);
  state_registry into_host;
  ASSERT_FALSE(into_host.add_host_buffer("weights", host.data(), device_bytes));
  read = st->restore_step(2, into_host, touched, buffer_match::subset);
  ASSERT_TRUE(read) << describe(read.error());
  EXPECT_EQ(host, saved);
  cudaFree(dev);
}

TEST_F(nccl_barrier_test, two_ranks_on_one_gpu_pass_their_barriers_together) {
  auto id = test::new_nccl_id();
  ASSERT_FALSE(id.empty());
  std::vector<std::unique_ptr<child_process>> ranks;
  for (int rank = 0; rank < 2; ++rank) ranks.push_back(start_rank(rank, id, "meet"));
  for (auto& rank : ranks) {
    EXPECT_EQ(next_line(*rank), "arrived checkpoint-shards-1");
    EXPECT_EQ(next_line(*rank), "arrived checkpoint-committed-1");
    EXPECT_EQ(rank->wait_exit(rank_timeout), 0);
  }
}

TEST_F(nccl_barrier_test, a_rank_that_never_arrives_times_the_barrier_out_not_the_trainers_comm) {
  auto id = test::new_nccl_id();
  ASSERT_FALSE(id.empty());
  auto alone = start_rank(0, id, "alone");
  auto holding = start_rank(1, id, "hold");
  EXPECT_EQ(next_line(*holding), "split");
  auto verdict = next_line(*alone);
  ASSERT_TRUE(verdict);
  EXPECT_NE(verdict->find("not every rank arrived"), std::string::npos) << *verdict;
  // The barrier's communicator is aborted; the trainer's still works.
  ASSERT_TRUE(holding->send_line("go"));
  EXPECT_EQ(next_line(*alone), "trainer sum 3");
  EXPECT_EQ(next_line(*holding), "trainer sum 3");
  EXPECT_EQ(alone->wait_exit(rank_timeout), 0);
  EXPECT_EQ(holding->wait_exit(rank_timeout), 0);
}

}  // namespace
}  // namespace lifeboat::checkpoint
