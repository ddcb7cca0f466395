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
///
/// Thread-safety: every call may come from any thread, but a blocking call
/// must not come from an actor on the middleman's thread (the agent's).
/// Blocking calls return within their timeout (plus a small grace) even when
/// the service is gone.
/// Lifetime: owns its agent, which it stops when destroyed. The actor system
/// it was connected with must outlive it. It may be shared (the worker's
/// actors hold it by std::shared_ptr); whoever may drop the last share on an
/// actor thread calls leave() first, so the destructor does not block there.
///
/// Errors every call that talks to the agent may return, besides its own:
///   errc::unavailable  the agent is not joined, has left, or lost the service
///                      ("coordination agent is gone" once it has ended);
///   errc::timeout      no reply from the agent within the call's bound.
class coordination_client {
 public:
  /// Spawns the agent and waits until it joined; retries the connection with
  /// backoff until cfg.join_timeout. Errors:
  ///   errc::refused      the join was refused (token, world size, rank,
  ///                      incarnation, version, a peer that is no service), at once;
  ///   errc::unavailable  no service could be reached within cfg.join_timeout;
  ///   errc::peer_lost    the service answered, then went away before the join;
  ///   errc::timeout      not joined within cfg.join_timeout;
  ///   errc::cancelled    left while still joining.
  static caf::expected<std::unique_ptr<coordination_client>> connect(caf::actor_system& sys,
                                                                     agent_config cfg);

  coordination_client(const coordination_client&) = delete;
  coordination_client& operator=(const coordination_client&) = delete;

  /// Leaves if not left; bounded by a short timeout, never hangs.
  ~coordination_client();

  /// The agent actor, for other actors (its message interface is documented
  /// in actors/coordination/coordination_agent.hpp).
  caf::actor agent() const { return agent_; }

  /// The rank this client joined as.
  int32_t rank() const { return cfg_.rank; }

  /// Insert-if-absent. Errors: errc::already_exists when the key is there,
  /// errc::invalid_argument for an empty key.
  caf::error insert(const std::string& key, const std::string& value);

  /// Blocks until the key exists. Errors: errc::timeout after `timeout`,
  /// errc::invalid_argument for too many blocking calls pending on this
  /// worker's connection, errc::cancelled when the service was reset.
  caf::expected<std::string> get(const std::string& key, std::chrono::milliseconds timeout);

  /// Starts a blocking get that cancel() can end with errc::cancelled; wait()
  /// collects it with get()'s errors, or errc::invalid_argument for a handle
  /// that is unknown or was collected before.
  caf::expected<get_handle> get_async(const std::string& key, std::chrono::milliseconds timeout);
  caf::expected<std::string> wait(const get_handle& handle);
  void cancel(const get_handle& handle);

  /// The value, or none when the key is absent (not an error).
  caf::expected<std::optional<std::string>> try_get(const std::string& key);
  /// Every key starting with `prefix`, with its value, in key order.
  caf::expected<std::vector<std::pair<std::string, std::string>>> get_prefix(
      const std::string& prefix);
  caf::error erase_prefix(const std::string& prefix);

  /// What a barrier's timeout makes of the participants that did not arrive.
  enum class absent_at_timeout {
    waited_for,  // nothing more: the arrivals fail with errc::timeout, naming them
    hung,        // the first one joined is hung: its failure (errc::hung) reaches every
                 // worker and fails the barrier (BarrierRequest.absent_hung)
  };

  /// Waits until every participant (none given: every rank) arrived. Errors:
  ///   errc::timeout           not all arrived within `timeout`;
  ///   errc::peer_error        a participant reported a failure (before or while waiting),
  ///                           or, with absent_at_timeout::hung, was declared hung
  ///                           at the timeout;
  ///   errc::peer_lost         a participant was lost or left;
  ///   errc::invalid_argument  this rank is no participant, a participant is out of
  ///                           range, the participants differ from the other
  ///                           arrivals', this rank already waits, or too many
  ///                           blocking calls are pending;
  ///   errc::cancelled         the service was reset.
  caf::error barrier(const std::string& name, std::chrono::milliseconds timeout,
                     std::vector<int32_t> participants = {},
                     absent_at_timeout absent = absent_at_timeout::waited_for);

  /// To `to_rank`, or to every_rank / every_other_rank (coordination_events.hpp);
  /// non-blocking, no error: a message to a worker that is gone is dropped.
  void send(int32_t to_rank, std::string channel, std::string payload);

  /// Tells every worker this one failed; non-blocking.
  void report_error(int32_t code, std::string message);

  /// The subscriber receives peer_message and peer_failure.
  void subscribe(caf::actor subscriber);

  /// Clean leave: this worker is not reported lost. Idempotent: a second call
  /// returns no error without asking the agent.
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
