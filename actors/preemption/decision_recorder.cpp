#include "actors/preemption/decision_recorder.hpp"

#include <string>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/coordination/coordination_atoms.hpp"
#include "platform/clock.hpp"

namespace lifeboat {

decision_recorder& decision_recorder::process() {
  static decision_recorder instance;
  return instance;
}

void decision_recorder::configure(int32_t rank, uint32_t generation, publisher publish) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (rank != rank_ || generation != generation_) {
    events_.clear();
    next_seq_ = 0;
    after_notice_ = false;
  }
  rank_ = rank;
  generation_ = generation;
  publish_ = std::move(publish);
}

void decision_recorder::on_notice() { record(decision_event::notice, -1, true); }

void decision_recorder::on_message(const wire::ProtocolMessage& msg) {
  switch (msg.body_case()) {
    case wire::ProtocolMessage::kNotice:
      return record(decision_event::notice, -1, true);
    case wire::ProtocolMessage::kQuery:
      return record(decision_event::query, -1, msg.query().deadline_unix_ms() != 0);
    // A commit is the agreement reaching this worker: on_agreement records
    // it as the step resolver acts on it, on the leader and the followers.
    // A save committed is recorded as it arrives (on_committed); of the
    // reports, the one that completes a round (on_round_completed).
    case wire::ProtocolMessage::kReport:
    case wire::ProtocolMessage::kCommit:
    case wire::ProtocolMessage::kCommitted:
    case wire::ProtocolMessage::BODY_NOT_SET:
      break;
  }
}

void decision_recorder::on_round_completed(const wire::StepReport& last) {
  record(decision_event::report, last.stop_step(), false);
}

void decision_recorder::on_agreement(int64_t step, bool backup) {
  record(decision_event::agreement, step, !backup);
}

void decision_recorder::on_snapshot(int64_t step) { record(decision_event::snapshot, step, false); }

void decision_recorder::on_shard_durable(int64_t step, double seconds, int64_t bytes) {
  record(decision_event::shard_durable, step, false, seconds, bytes);
}

void decision_recorder::on_committed(int64_t step) { record(decision_event::commit, step, false); }

void decision_recorder::on_exit(int64_t step) { record(decision_event::exit, step, false); }

std::vector<wire::DecisionEvent> decision_recorder::events() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return {events_.begin(), events_.end()};
}

void decision_recorder::record(const char* event, int64_t step, bool starts_decision,
                               double seconds, int64_t bytes) {
  wire::DecisionEvent e;
  publisher publish;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    after_notice_ = after_notice_ || starts_decision;
    e.set_rank(rank_);
    e.set_generation(generation_);
    e.set_seq(next_seq_++);
    e.set_event(event);
    e.set_unix_ms(static_cast<double>(unix_now_ms()));
    e.set_step(static_cast<double>(step));
    e.set_seconds(seconds);
    e.set_bytes(static_cast<double>(bytes));
    e.set_after_notice(after_notice_);
    if (events_.size() == max_events) events_.pop_front();
    events_.push_back(e);
    // A decision's events are few (the worker exits after it); backups
    // repeat all run long, so of those only the shards, and a bounded number.
    auto published = after_notice_ || (event == decision_event::shard_durable &&
                                       e.seq() < static_cast<uint32_t>(max_events));
    if (published) publish = publish_;
  }
  if (publish) publish(e);
}

decision_recorder::publisher publish_to_agent(const caf::actor& agent) {
  return [addr = agent.address()](const wire::DecisionEvent& e) {
    auto target = caf::actor_cast<caf::actor>(addr);
    if (!target) return;
    caf::anon_send(
        target, insert_atom::value,
        decision_event_key_prefix + std::to_string(e.rank()) + "/" + std::to_string(e.seq()),
        e.SerializeAsString());
  };
}

}  // namespace lifeboat
