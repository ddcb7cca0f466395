// The peer tier: which rank holds whose replica, and a replica_server with
// real sockets: a push is committed in the holder's memory, a fetch streams it
// back bit-exact into the registered buffers, within the steps asked for; a
// replica corrupt on the holder fails the fetch naming its file; a rank the
// server does not hold for and a peer of another job are refused.
// With TLS (a key from the token), a capture on the path holds none of the
// shard's bytes, and a byte flipped on the path fails the push.
#include "runtime/peer_tier.hpp"

#include <sys/stat.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "checkpoint/layout.hpp"
#include "checkpoint/staging.hpp"
#include "messages/checkpoint.pb.h"
#include "messages/errors.hpp"
#include "tests/actors/coordination/tcp_proxy.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/checkpoint/worker_state.hpp"

namespace lifeboat {
namespace {

using checkpoint::memory_tier;
using checkpoint::testing::temp_dir;
using checkpoint::testing::worker_state;

constexpr const char* token = "peer-tier-test-token";
constexpr std::size_t state_bytes = 512 * 1024;
constexpr int world_size = 4;
constexpr int rank = 1;
constexpr int holder = 2;

TEST(peer_tier_test, the_holder_is_the_next_rank_on_another_host) {
  EXPECT_EQ(replica_holder({"a", "a", "b", "b"}, 0), 2);
  EXPECT_EQ(replica_holder({"a", "a", "b", "b"}, 1), 2);
  EXPECT_EQ(replica_holder({"a", "a", "b", "b"}, 2), 0);
  EXPECT_EQ(replica_holder({"a", "a", "b", "b"}, 3), 0);
  EXPECT_EQ(replica_holder({"a", "b", "a", "b"}, 0), 1);
  EXPECT_EQ(replica_holder({"a", "b", "a", "b"}, 3), 0);
}

TEST(peer_tier_test, on_one_host_the_holder_is_the_next_rank) {
  EXPECT_EQ(replica_holder({"h", "h", "h", "h"}, 0), 1);
  EXPECT_EQ(replica_holder({"h", "h", "h", "h"}, 3), 0);
}

TEST(peer_tier_test, ranks_without_a_peer_tier_are_passed_over) {
  EXPECT_EQ(replica_holder({"h", "", "h"}, 0), 2);
  EXPECT_EQ(replica_holder({"h", "", "h"}, 1), std::nullopt);
  EXPECT_EQ(replica_holder({"h", ""}, 0), std::nullopt);
  EXPECT_EQ(replica_holder({"h"}, 0), std::nullopt);
  EXPECT_EQ(replica_holder({"h", "h"}, 2), std::nullopt);
}

TEST(peer_tier_test, the_local_address_toward_loopback_is_loopback) {
  EXPECT_EQ(local_address_toward("127.0.0.1", 9), std::string{"127.0.0.1"});
  EXPECT_FALSE(local_address_toward("no-such-host.invalid", 9));
}

std::shared_ptr<tls_context> psk_context(tls_role role) {
  tls_config cfg;
  cfg.enabled = true;
  auto made = tls_context::make(cfg, token, role);
  return made ? *made : nullptr;
}

class peer_tier_server_test : public ::testing::Test {
 protected:
  void SetUp() override { start_server(nullptr); }

  void start_server(std::shared_ptr<tls_context> tls) {
    server_.reset();
    replica_server::config cfg;
    cfg.host = "127.0.0.1";
    cfg.token = token;
    cfg.dir = dir_.sub("holder/peer");
    cfg.world_size = world_size;
    cfg.holds = [](int source) { return source == rank; };
    cfg.tls = std::move(tls);
    auto started = replica_server::start(std::move(cfg));
    ASSERT_TRUE(started) << describe(started.error());
    server_ = std::move(*started);
    if (!own_) own_.emplace(open_own("own"));
  }

  memory_tier open_own(const std::string& name) {
    auto tier = memory_tier::open(dir_.sub(name), rank, world_size);
    EXPECT_TRUE(tier) << describe(tier.error());
    return std::move(*tier);
  }

  void save(int64_t step) {
    state_.set(step);
    auto snap = checkpoint::take_snapshot(state_.registry, *pool_);
    ASSERT_TRUE(snap);
    ASSERT_TRUE(own_->save(*snap, step, step * 10));
  }

  replica_client client(int as_rank = rank, const std::string& secret = token) {
    return replica_client{"127.0.0.1", server_->port(), secret, as_rank, world_size};
  }

  // A TLS client through `proxy`.
  replica_client tls_client(const test::tcp_proxy& proxy) {
    return replica_client{"127.0.0.1", proxy.port(), token,
                          rank,        world_size,   psk_context(tls_role::client)};
  }

  // Fetches this rank's replica into `into`'s buffers through `c`.
  caf::expected<std::optional<checkpoint::checkpoint_info>> fetch(
      replica_client c, worker_state& into, std::optional<int64_t> max_step = std::nullopt,
      int64_t min_step = -1) {
    return c.fetch(into.registry, *pool_, max_step, min_step, progress_);
  }

  // Whether `bytes` holds a run of the saved state's bytes.
  bool holds_state(const std::string& bytes) const {
    return bytes.find(std::string(state_.weights.data() + 4096, 64)) != std::string::npos;
  }

  temp_dir dir_;
  worker_state state_{state_bytes};
  std::shared_ptr<checkpoint::staging_pool> pool_ = checkpoint::staging_pool::make();
  checkpoint::peer_fetch_progress progress_;  // of the last fetch
  std::unique_ptr<replica_server> server_;
  std::optional<memory_tier> own_;
};

TEST_F(peer_tier_server_test, a_pushed_shard_comes_back_bit_exact_into_the_buffers) {
  save(5);
  auto pushed = client().push(*own_, 5, 50);
  ASSERT_TRUE(pushed) << describe(pushed.error());
  EXPECT_GE(*pushed, 0.0);
  // The holder committed it in its own memory, a memory tier per rank.
  EXPECT_TRUE(std::filesystem::exists(
      dir_.sub("holder/peer/rank-00001-of-00004/step-000000000005/MANIFEST")));
  // A replaced host: an empty memory tier, fresh buffers.
  ASSERT_FALSE(own_->remove());
  worker_state fresh{state_bytes};
  auto fetched = fetch(client(), fresh);
  ASSERT_TRUE(fetched) << describe(fetched.error());
  ASSERT_TRUE(*fetched);
  EXPECT_EQ((*fetched)->step, 5);
  EXPECT_EQ((*fetched)->total_run_calls, 50);
  EXPECT_GE((*fetched)->bytes, static_cast<int64_t>(state_bytes));
  EXPECT_EQ((*fetched)->tiers.at(0).name, checkpoint::tier_peer);
  EXPECT_TRUE(fresh.holds(5));
  EXPECT_EQ(progress_.step, 5);
  EXPECT_TRUE(progress_.touched);
}

// A spare asked for ahead of the save is the file the push is written into
// at the holder; the replica still comes back bit-exact.
TEST_F(peer_tier_server_test, a_push_is_written_into_the_spare_the_holder_allocated) {
  save(5);
  auto own_data = own_->files_of(5).data;
  auto data_bytes = std::filesystem::file_size(own_data);
  ASSERT_FALSE(client().prepare_spare(data_bytes));
  auto held = dir_.sub("holder/peer/rank-00001-of-00004");
  auto spare = held + "/" + checkpoint::memory_tier_spare_name;
  ASSERT_EQ(std::filesystem::file_size(spare), data_bytes);
  struct stat allocated {};
  ASSERT_EQ(::stat(spare.c_str(), &allocated), 0);
  ASSERT_TRUE(client().push(*own_, 5, 50));
  struct stat replica {};
  ASSERT_EQ(
      ::stat((held + "/step-000000000005/" + checkpoint::shard_data_name(0, 1)).c_str(), &replica),
      0);
  EXPECT_EQ(replica.st_ino, allocated.st_ino);
  EXPECT_FALSE(std::filesystem::exists(spare));
  worker_state fresh{state_bytes};
  auto fetched = fetch(client(), fresh);
  ASSERT_TRUE(fetched && *fetched);
  EXPECT_TRUE(fresh.holds(5));
}

// Without TLS a push sends the tier's data file in the kernel (sendfile),
// even where the saver hands it the staging memory: here the file was made
// different after the save, to tell.
TEST_F(peer_tier_server_test, without_tls_a_push_sends_the_tiers_file) {
  save(5);
  auto data_path = own_->files_of(5).data;
  auto saved = checkpoint::testing::read_file(data_path);
  checkpoint::testing::write_file(data_path, std::string(saved.size(), 'x'));
  ASSERT_TRUE(client().push(*own_, 5, 50, saved));
  worker_state fresh{state_bytes};
  auto from_file = fetch(client(), fresh);
  ASSERT_FALSE(from_file);
  EXPECT_NE(describe(from_file.error()).find("corrupt"), std::string::npos)
      << describe(from_file.error());
  checkpoint::testing::write_file(data_path, saved);
  ASSERT_TRUE(client().push(*own_, 5, 50, saved));
  auto fetched = fetch(client(), fresh);
  ASSERT_TRUE(fetched) << describe(fetched.error());
  ASSERT_TRUE(*fetched);
  EXPECT_TRUE(fresh.holds(5));
}

// Through a TLS session the staging memory's bytes travel, not the tier's
// file read back; without them (or with too few), the file's go.
TEST_F(peer_tier_server_test, with_tls_a_push_seals_the_staging_memory_when_it_is_given) {
  start_server(psk_context(tls_role::server));
  save(5);
  test::tcp_proxy proxy{server_->port()};
  auto data_path = own_->files_of(5).data;
  auto saved = checkpoint::testing::read_file(data_path);
  checkpoint::testing::write_file(data_path, std::string(saved.size(), 'x'));
  auto pushed = tls_client(proxy).push(*own_, 5, 50, saved);
  ASSERT_TRUE(pushed) << describe(pushed.error());
  worker_state fresh{state_bytes};
  auto fetched = fetch(tls_client(proxy), fresh);
  ASSERT_TRUE(fetched) << describe(fetched.error());
  ASSERT_TRUE(*fetched);
  EXPECT_TRUE(fresh.holds(5));
  ASSERT_TRUE(tls_client(proxy).push(*own_, 5, 50, std::string_view{saved}.substr(1)));
  auto from_file = fetch(tls_client(proxy), fresh);
  ASSERT_FALSE(from_file);
  EXPECT_NE(describe(from_file.error()).find("corrupt"), std::string::npos)
      << describe(from_file.error());
}

TEST_F(peer_tier_server_test, a_spare_the_holder_has_no_room_for_is_refused_with_why) {
  auto refused = client().prepare_spare(uint64_t{1} << 50);
  ASSERT_TRUE(refused);
  EXPECT_NE(describe(refused).find("no spare"), std::string::npos) << describe(refused);
}

TEST_F(peer_tier_server_test, a_fetch_gets_the_newest_step_in_range_or_none) {
  for (int64_t step : {3, 4}) {
    save(step);
    ASSERT_TRUE(client().push(*own_, step, step * 10));
  }
  worker_state fresh{state_bytes};
  auto newest = fetch(client(), fresh);
  ASSERT_TRUE(newest && *newest);
  EXPECT_EQ((*newest)->step, 4);
  EXPECT_TRUE(fresh.holds(4));
  auto capped = fetch(client(), fresh, 3);
  ASSERT_TRUE(capped && *capped);
  EXPECT_EQ((*capped)->step, 3);
  EXPECT_TRUE(fresh.holds(3));
  auto too_old = fetch(client(), fresh, std::nullopt, 5);
  ASSERT_TRUE(too_old);
  EXPECT_FALSE(*too_old);
}

// A replica whose data went bad on the holder fails the fetch as the bytes
// arrive, naming the holder's file and the chunk; the restore then reads the
// next tier (tiered_restore_test).
TEST_F(peer_tier_server_test, a_corrupt_replica_fails_the_fetch_naming_the_holders_file) {
  save(1);
  ASSERT_TRUE(client().push(*own_, 1, 10));
  auto step_dir = dir_.sub("holder/peer/rank-00001-of-00004/step-000000000001");
  // A memory tier keeps each rank's shards as rank 0 of 1.
  auto data_name = checkpoint::shard_data_name(0, 1);
  ASSERT_TRUE(checkpoint::testing::flip_byte(step_dir + "/" + data_name, state_bytes / 2));
  worker_state fresh{state_bytes};
  auto fetched = fetch(client(), fresh);
  ASSERT_FALSE(fetched);
  EXPECT_EQ(fetched.error(), make_error(errc::corrupt));
  auto expected = "corrupt file 127.0.0.1:" + std::to_string(server_->port()) +
                  ":step-000000000001/" + data_name + ": checksum mismatch in chunk 0";
  EXPECT_NE(describe(fetched.error()).find(expected), std::string::npos)
      << describe(fetched.error());
  EXPECT_EQ(progress_.step, 1);
  EXPECT_TRUE(progress_.touched);
}

TEST_F(peer_tier_server_test, a_rank_the_server_does_not_hold_for_is_refused) {
  auto other = memory_tier::open(dir_.sub("other"), 3, world_size);
  ASSERT_TRUE(other);
  state_.set(1);
  auto snap = checkpoint::take_snapshot(state_.registry, *pool_);
  ASSERT_TRUE(snap);
  ASSERT_TRUE(other->save(*snap, 1, 10));
  auto pushed = client(3).push(*other, 1, 10);
  ASSERT_FALSE(pushed);
  EXPECT_NE(describe(pushed.error()).find("does not hold the replicas of rank 3"),
            std::string::npos)
      << describe(pushed.error());
  worker_state fresh{state_bytes};
  auto fetched = fetch(client(3), fresh);
  ASSERT_FALSE(fetched);
  EXPECT_FALSE(std::filesystem::exists(dir_.sub("holder/peer/rank-00003-of-00004")));
}

TEST_F(peer_tier_server_test, a_request_of_an_unknown_kind_is_answered_with_an_error) {
  auto link = peer_link::connect("127.0.0.1", server_->port(), token);
  ASSERT_TRUE(link) << describe(link.error());
  wire::ReplicaRequest request;
  request.set_proof(link->proof());
  request.set_kind(static_cast<wire::ReplicaRequestKind>(7));
  request.set_rank(rank);
  request.set_world_size(world_size);
  ASSERT_FALSE(link->send(request));
  wire::ReplicaReply reply;
  ASSERT_FALSE(link->receive(reply));
  EXPECT_FALSE(reply.found());
  EXPECT_EQ(reply.error(), "a request of unknown kind 7");
}

TEST_F(peer_tier_server_test, a_peer_of_another_job_is_refused) {
  save(1);
  auto pushed = client(rank, "another job's token").push(*own_, 1, 10);
  ASSERT_FALSE(pushed);
  EXPECT_EQ(pushed.error(), make_error(errc::refused));
  EXPECT_FALSE(
      std::filesystem::exists(dir_.sub("holder/peer/rank-00001-of-00004/step-000000000001")));
}

TEST_F(peer_tier_server_test, in_clear_text_a_capture_holds_the_shard) {
  save(1);
  test::tcp_proxy proxy{server_->port()};
  ASSERT_TRUE(
      replica_client("127.0.0.1", proxy.port(), token, rank, world_size).push(*own_, 1, 10));
  EXPECT_TRUE(holds_state(proxy.recorded()));
}

TEST_F(peer_tier_server_test, with_tls_a_capture_holds_none_of_the_shard) {
  start_server(psk_context(tls_role::server));
  save(1);
  test::tcp_proxy proxy{server_->port()};
  auto pushed = tls_client(proxy).push(*own_, 1, 10);
  ASSERT_TRUE(pushed) << describe(pushed.error());
  worker_state fresh{state_bytes};
  auto fetched = fetch(tls_client(proxy), fresh);
  ASSERT_TRUE(fetched && *fetched);
  EXPECT_TRUE(fresh.holds(1));
  auto recorded = proxy.recorded();
  EXPECT_GT(recorded.size(), 2 * state_bytes);
  EXPECT_FALSE(holds_state(recorded));
}

TEST_F(peer_tier_server_test, with_tls_a_byte_flipped_on_the_path_fails_the_push) {
  start_server(psk_context(tls_role::server));
  save(1);
  test::tcp_proxy proxy{server_->port()};
  // The first bytes upstream: the ClientHello, whose change fails the handshake.
  proxy.flip_next_upstream_byte();
  auto pushed = tls_client(proxy).push(*own_, 1, 10);
  ASSERT_FALSE(pushed);
  EXPECT_TRUE(proxy.flipped());
  EXPECT_FALSE(std::filesystem::exists(
      dir_.sub("holder/peer/rank-00001-of-00004/step-000000000001/MANIFEST")));
}

TEST_F(peer_tier_server_test, a_tls_client_and_a_clear_text_server_do_not_talk) {
  save(1);
  auto pushed = replica_client("127.0.0.1", server_->port(), token, rank, world_size,
                               psk_context(tls_role::client))
                    .push(*own_, 1, 10);
  ASSERT_FALSE(pushed);
  EXPECT_FALSE(
      std::filesystem::exists(dir_.sub("holder/peer/rank-00001-of-00004/step-000000000001")));
}

TEST_F(peer_tier_server_test, remove_replicas_leaves_none) {
  save(1);
  ASSERT_TRUE(client().push(*own_, 1, 10));
  EXPECT_FALSE(server_->remove_replicas());
  EXPECT_FALSE(std::filesystem::exists(dir_.sub("holder/peer")));
}

}  // namespace
}  // namespace lifeboat
