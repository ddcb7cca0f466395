// Needs a GPU: skips with the reason where no CUDA device can be used.
#include "checkpoint/nccl_barrier.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <gtest/gtest.h>

#include "checkpoint/device_memory.hpp"
#include "checkpoint/store.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"

namespace lifeboat::checkpoint {
namespace {

constexpr auto barrier_timeout = std::chrono::seconds{30};
constexpr std::size_t device_bytes = 1 << 20;

class nccl_barrier_test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto err = device::available()) {
      auto bar = nccl_barrier::make(nullptr, nullptr);
      ASSERT_FALSE(bar);
      EXPECT_EQ(bar.error(), make_error(errc::unavailable));
      GTEST_SKIP() << "no usable CUDA device, GPU test skipped: " << describe(err);
    }
    int dev = 0;
    ASSERT_EQ(ncclCommInitAll(&comm_, 1, &dev), ncclSuccess);
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }

  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }

  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

TEST_F(nccl_barrier_test, a_single_rank_passes_its_barrier) {
  auto bar = make_nccl_barrier(comm_, stream_);
  ASSERT_TRUE(bar) << describe(bar.error());
  EXPECT_FALSE((*bar)->arrive_and_wait("checkpoint-shards-1", barrier_timeout));
  EXPECT_FALSE((*bar)->arrive_and_wait("checkpoint-committed-1", barrier_timeout));
}

TEST_F(nccl_barrier_test, device_buffers_round_trip_through_the_store) {
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

}  // namespace
}  // namespace lifeboat::checkpoint
