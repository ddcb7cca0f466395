#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor.hpp>

#include "messages/preemption.pb.h"
#include "messages/status.pb.h"

namespace lifeboat {

/// Where a worker publishes its decision events in the coordination service's
/// key-value store: PREFIX RANK/SEQ (insert-if-absent, one key per event), read
/// by the coordinator's job history (actors/status/job_history.hpp).
constexpr const char* decision_event_key_prefix = "lifeboat/status/event/";

/// The events of a preemption decision (DecisionEvent.event), in protocol order.
namespace decision_event {
constexpr const char* notice = "notice";
constexpr const char* query = "query";
constexpr const char* report = "report";
constexpr const char* agreement = "agreement";
constexpr const char* snapshot = "snapshot";
constexpr const char* shard_durable = "shard durable";
constexpr const char* commit = "commit";
constexpr const char* exit = "exit";
}  // namespace decision_event

/// A worker's record of the preemption protocol as it lived it: each notice,
/// query, report, agreement, save and exit with the wall clock, kept in memory
/// (at most max_events, the oldest dropped) for its status endpoint and handed
/// to a publisher that forwards it to the coordinator: every event from the
/// first notice on, and before it the shards of at most max_events backups'
/// events (one key each in the coordination service).
///
/// One per process (process()), because the actors that take these steps
/// (step resolver, checkpoint writer, exit controller) belong to the one
/// worker a process runs. Thread-safe: every call may come from any thread;
/// the publisher is called with no lock held, on the recording thread, and
/// must not block (the runtime's sends a message to its coordination agent).
class decision_recorder {
 public:
  using publisher = std::function<void(const wire::DecisionEvent&)>;

  static constexpr std::size_t max_events = 512;

  static decision_recorder& process();

  /// The worker's rank and generation (LIFEBOAT_RESTART_COUNT), and where its
  /// events go from now on; an empty publisher stops publishing. Events of
  /// an earlier configuration are dropped.
  void configure(int32_t rank, uint32_t generation, publisher publish);

  /// This worker's own notice.
  void on_notice();

  /// A protocol message this worker took (a report and a save committed
  /// excepted: see on_round_completed and on_committed).
  void on_message(const wire::ProtocolMessage& msg);

  /// The leader took `last`, the report that completed a round. The leader
  /// takes one report from every worker, and an event each would be as many
  /// keys in the coordination service, each a frame ahead of the commit (at
  /// 1,024 workers, 1,023 a decision): only the last is recorded.
  void on_round_completed(const wire::StepReport& last);

  /// The save at `step` was committed, as the message arrives: before the
  /// exit controller hears of it, whose exit event it precedes.
  void on_committed(int64_t step);

  /// This worker took the agreement on `step` (the leader as it decided, a
  /// follower with the commit); `backup`: a periodic save, no notice.
  void on_agreement(int64_t step, bool backup);

  /// The trainer began a save (the snapshot) at `step`.
  void on_snapshot(int64_t step);

  /// This worker's shard of `step` is durable after `seconds`, `bytes` long.
  void on_shard_durable(int64_t step, double seconds, int64_t bytes);

  /// The exit controller lets the trainer exit after the save at `step`.
  void on_exit(int64_t step);

  /// Every event kept, oldest first.
  std::vector<wire::DecisionEvent> events() const;

 private:
  void record(const char* event, int64_t step, bool starts_decision, double seconds = 0,
              int64_t bytes = 0);

  mutable std::mutex mtx_;
  int32_t rank_ = -1;
  uint32_t generation_ = 0;
  uint32_t next_seq_ = 0;
  // Set by the first event that shows a notice (its own, one a peer sent,
  // a query or agreement with a deadline): what follows is no backup.
  bool after_notice_ = false;
  publisher publish_;
  // The newest max_events; a deque drops the oldest without moving the rest.
  std::deque<wire::DecisionEvent> events_;
};

/// A publisher that inserts each event at decision_event_key_prefix RANK/SEQ
/// through `agent` (a coordination agent), without waiting for the reply. It
/// holds the agent weakly: once the agent is gone it does nothing.
decision_recorder::publisher publish_to_agent(const caf::actor& agent);

}  // namespace lifeboat
