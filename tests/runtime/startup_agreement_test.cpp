// startup_agreement over a real coordination service and two joined clients,
// each rank with a checkpoint directory of its own: the step every rank
// restores when their directories hold different ones, a fresh start where
// none holds one, a configuration error on every rank where one restored and
// a peer has nothing, a peer's step that is no number, and the meetings after
// the restore (the peer tier's addresses, the checkpoint-ready barrier).
#include "runtime/startup_agreement.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "lifeboat/errors.hpp"
#include "messages/errors.hpp"
#include "tests/actors/coordination/coordination_fixture.hpp"
#include "tests/checkpoint/test_support.hpp"

namespace lifeboat::test {
namespace {

using checkpoint::testing::fill_pattern;
using checkpoint::testing::pattern;
using checkpoint::testing::temp_dir;

constexpr int world = 2;
constexpr std::size_t state_bytes = 4096;
// The pattern a rank's buffer holds before any restore: the trainer's
// initial state.
constexpr uint64_t initial_seed = 7;
constexpr auto meeting_bound = std::chrono::seconds{10};

// What one rank's restore gave: the restored total_run_calls, or the text of
// the configuration error it threw (or of another error, which no test expects).
struct outcome {
  std::optional<int64_t> total_run_calls;
  std::string config_error;
  std::string other_error;
};

// One rank: its client, its checkpoint directory and the buffer it restores into.
struct rank_side {
  explicit rank_side(const std::string& dir) : weights(pattern(state_bytes, initial_seed)) {
    state.add_buffer("weights", weights.data(), weights.size());
    auto opened = checkpoint::store::open({dir, 0, 1});
    EXPECT_TRUE(opened) << describe(opened.error());
    if (opened) store.emplace(std::move(*opened));
  }

  std::unique_ptr<coordination_client> client;
  std::vector<char> weights;
  checkpoint_state state;
  std::optional<checkpoint::store> store;
};

class startup_agreement_test : public service_fixture {
 protected:
  void SetUp() override {
    start_service(world);
    for (int rank = 0; rank < world; ++rank) {
      auto cfg = agent_cfg(rank);
      cfg.world_size = world;
      auto client = coordination_client::connect(sys, cfg);
      ASSERT_TRUE(client) << describe(client.error());
      ranks_[rank].client = std::move(*client);
    }
  }

  void TearDown() override {
    for (auto& side : ranks_) side.client.reset();
    service_fixture::TearDown();
  }

  // Commits `step` in `rank`'s directory (its buffer the pattern of `step`,
  // total_run_calls = step), then gives the buffer its initial state back.
  void commit(int rank, int64_t step) {
    auto& side = ranks_[rank];
    ASSERT_TRUE(side.store);
    // In place: the buffer is registered at its address.
    fill_pattern(side.weights.data(), state_bytes, static_cast<uint64_t>(step));
    auto snap = side.store->take_snapshot(side.state.registry());
    ASSERT_TRUE(snap) << describe(snap.error());
    auto written = side.store->write_shard(*snap, step);
    ASSERT_TRUE(written) << describe(written.error());
    ASSERT_FALSE(side.store->commit(step, step));
    fill_pattern(side.weights.data(), state_bytes, initial_seed);
  }

  outcome restore(int rank) {
    auto& side = ranks_[rank];
    if (!side.store) return {std::nullopt, {}, "no store"};
    startup_agreement agreement{*side.client, rank, world};
    // On either thread, whatever it throws becomes the outcome, never
    // std::terminate.
    try {
      return {agreement.restore(&*side.store, nullptr, side.state, "rank-dir"), {}, {}};
    } catch (const config_error& e) {
      return {std::nullopt, e.what(), {}};
    } catch (const std::exception& e) {
      return {std::nullopt, {}, e.what()};
    }
  }

  // Runs `part` for every rank at once, rank 1's on a thread of its own:
  // each waits in the agreement's meetings for the other.
  static void on_every_rank(const std::function<void(int)>& part) {
    std::thread second{part, 1};
    part(0);
    second.join();
  }

  std::vector<outcome> restore_all() {
    std::vector<outcome> out(world);
    on_every_rank([&](int rank) { out[rank] = restore(rank); });
    return out;
  }

  temp_dir dir_;
  rank_side ranks_[world] = {rank_side{dir_.sub("rank-0")}, rank_side{dir_.sub("rank-1")}};
};

TEST_F(startup_agreement_test, every_rank_restores_the_newest_step_that_all_of_them_hold) {
  ASSERT_NO_FATAL_FAILURE(commit(0, 10));
  ASSERT_NO_FATAL_FAILURE(commit(0, 20));
  ASSERT_NO_FATAL_FAILURE(commit(1, 10));
  auto out = restore_all();
  for (int rank = 0; rank < world; ++rank) {
    EXPECT_EQ(out[rank].total_run_calls, 10)
        << "rank " << rank << ": " << out[rank].config_error << out[rank].other_error;
    EXPECT_EQ(ranks_[rank].weights, pattern(state_bytes, 10)) << "rank " << rank;
  }
}

TEST_F(startup_agreement_test, without_any_checkpoint_every_rank_starts_fresh_untouched) {
  auto out = restore_all();
  for (int rank = 0; rank < world; ++rank) {
    EXPECT_EQ(out[rank].total_run_calls, 0)
        << "rank " << rank << ": " << out[rank].config_error << out[rank].other_error;
    EXPECT_EQ(ranks_[rank].weights, pattern(state_bytes, initial_seed)) << "rank " << rank;
  }
}

// Rank 0 restored step 20 over its initial state; rank 1 has nothing: no
// state is common to both, and a fresh start would train rank 0 from step
// 20's.
TEST_F(startup_agreement_test, a_rank_without_a_checkpoint_beside_one_that_restored_stops_all) {
  ASSERT_NO_FATAL_FAILURE(commit(0, 20));
  auto out = restore_all();
  for (int rank = 0; rank < world; ++rank) {
    EXPECT_FALSE(out[rank].total_run_calls) << "rank " << rank;
    EXPECT_NE(out[rank].config_error.find(
                  "rank 1 has no checkpoint it can restore, and rank 0 restored step 20"),
              std::string::npos)
        << "rank " << rank << ": " << out[rank].config_error;
  }
}

// Rank 0 has steps 20 and 30, rank 1 step 10 only: the second round asks
// rank 0 for a step no later than 10, which it does not have.
TEST_F(startup_agreement_test, no_common_step_after_the_first_round_stops_all_too) {
  ASSERT_NO_FATAL_FAILURE(commit(0, 20));
  ASSERT_NO_FATAL_FAILURE(commit(0, 30));
  ASSERT_NO_FATAL_FAILURE(commit(1, 10));
  auto out = restore_all();
  for (int rank = 0; rank < world; ++rank)
    EXPECT_NE(out[rank].config_error.find(
                  "rank 0 has no checkpoint it can restore at or before step 10, and rank 1 "
                  "restored step 10"),
              std::string::npos)
        << "rank " << rank << ": " << out[rank].config_error;
}

// What a peer publishes is text from another process: rank 1's client, in
// this test's hands, publishes a step that is no number.
TEST_F(startup_agreement_test, a_peers_step_that_is_no_number_is_a_configuration_error) {
  ASSERT_NO_FATAL_FAILURE(commit(0, 20));
  outcome first;
  std::thread rank0{[&] { first = restore(0); }};
  auto& peer = *ranks_[1].client;
  EXPECT_FALSE(peer.insert("lifeboat/restore/0/1", "twenty"));
  EXPECT_FALSE(peer.barrier("lifeboat/restore/0/", meeting_bound));
  rank0.join();
  EXPECT_FALSE(first.total_run_calls);
  EXPECT_NE(first.config_error.find("lifeboat/restore/0/1"), std::string::npos)
      << first.config_error;
}

TEST_F(startup_agreement_test, every_rank_gets_every_ranks_peer_tier_address_by_rank) {
  std::vector<std::string> seen[world];
  auto publish = [&](int rank) {
    startup_agreement agreement{*ranks_[rank].client, rank, world};
    seen[rank] = agreement.publish_peer_addresses("10.0.0." + std::to_string(rank) + ":7000");
  };
  on_every_rank(publish);
  const std::vector<std::string> both{"10.0.0.0:7000", "10.0.0.1:7000"};
  EXPECT_EQ(seen[0], both);
  EXPECT_EQ(seen[1], both);
}

// No trainer handed over an NCCL communicator: every rank meets through the
// coordination service, and one worker alone needs no barrier.
TEST_F(startup_agreement_test, without_a_communicator_the_ready_barrier_is_the_services) {
  caf::error met[world];
  auto meet = [&](int rank) {
    startup_agreement agreement{*ranks_[rank].client, rank, world};
    auto barrier = agreement.make_ready_barrier(nullptr);
    met[rank] = barrier ? barrier->arrive_and_wait("ready-test", meeting_bound)
                        : make_error(errc::invalid_argument, "no barrier");
  };
  on_every_rank(meet);
  EXPECT_FALSE(met[0]) << describe(met[0]);
  EXPECT_FALSE(met[1]) << describe(met[1]);
  startup_agreement alone{*ranks_[0].client, 0, 1};
  EXPECT_EQ(alone.make_ready_barrier(nullptr), nullptr);
}

}  // namespace
}  // namespace lifeboat::test
