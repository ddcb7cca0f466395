#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "actors/coordination/coordination_agent.hpp"
#include "actors/coordination/coordination_service.hpp"

namespace lifeboat {

/// A blocking get in flight; collect it with wait() exactly once.
struct get_handle {
  uint64_t id = 0;
  std::chrono::milliseconds timeout{0};
};

/// A worker's handle on the coordination service, for code outside actors.
/// Thread-safe: every call may come from any thread. Blocking calls return
/// within their timeout (plus a small grace) even when the service is gone.
class coordination_client {
 public:
  /// Spawns the agent and waits until it joined; retries the connection with
  /// backoff until cfg.join_timeout. A refused join (token, world size, rank,
  /// incarnation, version) fails at once with errc::refused and the reason.
  static caf::expected<std::unique_ptr<coordination_client>> connect(caf::actor_system& sys,
                                                                     agent_config cfg);

  coordination_client(const coordination_client&) = delete;
  coordination_client& operator=(const coordination_client&) = delete;

  /// Leaves if not left; bounded by a short timeout, never hangs.
  ~coordination_client();

  /// The agent actor, for other actors (its message interface is documented
  /// in actors/coordination/coordination_agent.hpp).
  caf::actor agent() const { return agent_; }

  /// Insert-if-absent: errc::already_exists when the key is there.
  caf::error insert(const std::string& key, const std::string& value);

  /// Blocks until the key exists: errc::timeout after `timeout`.
  caf::expected<std::string> get(const std::string& key, std::chrono::milliseconds timeout);

  /// Starts a blocking get that cancel() can end with errc::cancelled.
  caf::expected<get_handle> get_async(const std::string& key, std::chrono::milliseconds timeout);
  caf::expected<std::string> wait(const get_handle& handle);
  void cancel(const get_handle& handle);

  caf::expected<std::optional<std::string>> try_get(const std::string& key);
  caf::expected<std::vector<std::pair<std::string, std::string>>> get_prefix(
      const std::string& prefix);
  caf::error erase_prefix(const std::string& prefix);

  /// Waits until every participant (none given: every rank) arrived.
  caf::error barrier(const std::string& name, std::chrono::milliseconds timeout,
                     std::vector<int32_t> participants = {});

  /// To `to_rank`, or to every_rank / every_other_rank (coordination_events.hpp); non-blocking.
  void send(int32_t to_rank, std::string channel, std::string payload);

  /// Tells every worker this one failed; non-blocking.
  void report_error(int32_t code, std::string message);

  /// The subscriber receives peer_message and peer_failure.
  void subscribe(caf::actor subscriber);

  /// Clean leave: this worker is not reported lost. Idempotent.
  caf::error leave();

 private:
  coordination_client(caf::actor_system& sys, caf::actor agent, agent_config cfg);

  // One blocking round trip to this client's agent; fails at once when the
  // agent has ended.
  template <class OnReply, class... Ts>
  caf::error ask_agent(std::chrono::milliseconds timeout, OnReply on_reply, Ts&&... xs);

  caf::actor_system& sys_;
  caf::actor agent_;
  agent_config cfg_;
  std::atomic<bool> left_{false};
};

}  // namespace lifeboat
