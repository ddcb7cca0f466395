#include "actors/preemption/step_resolver.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include <caf/io/middleman.hpp>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_atoms.hpp"
#include "actors/coordination/coordination_client.hpp"
#include "actors/coordination/coordination_events.hpp"
#include "actors/preemption/decision_recorder.hpp"
#include "actors/preemption/protocol.hpp"
#include "messages/log.hpp"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "platform/clock.hpp"

namespace lifeboat {

const char* step_resolver_actor_state::name = "step_resolver";

namespace {

// The resolver wakes once per step-time window: to sample the step time and
// to check for a backup save. Nothing waits on the tick: the final save has a
// timer of its own and is tried again after every protocol message (what ends
// a save or a round arrives as one). A worker's tick costs little, but a
// host that runs many simulated workers pays for all of them: at 1,024 a
// tick of 50 ms was 20,000 timer wakeups a second beside the protocol's
// messages (scale_bench).
constexpr auto tick_interval = std::chrono::milliseconds{step_sample_ms};
constexpr auto notice_record_timeout = std::chrono::seconds{10};

using self_ptr = caf::io::stateful_broker<step_resolver_actor_state>*;
using final_due_atom = caf::atom_constant<caf::atom("finaldue")>;

void send_out(self_ptr self, std::vector<outgoing> out) {
  for (auto& msg : out)
    self->state.links.client->send(msg.to, protocol_channel, msg.message.SerializeAsString());
}

const char* body_name(const wire::ProtocolMessage& msg) {
  switch (msg.body_case()) {
    case wire::ProtocolMessage::kNotice:
      return "a notice";
    case wire::ProtocolMessage::kQuery:
      return "a query";
    case wire::ProtocolMessage::kReport:
      return "a report";
    case wire::ProtocolMessage::kCommit:
      return "a commit";
    case wire::ProtocolMessage::kCommitted:
      return "a save committed";
    case wire::ProtocolMessage::BODY_NOT_SET:
      break;
  }
  return "an empty message";
}

// At debug level every protocol step a worker takes is logged with the wall
// clock: the lines of all workers then line up into one timeline of the round
// and show where an agreement's time went (handler_bench's phases read them).
// Below debug, no clock is read and nothing is formatted.
void log_taken(const char* what) {
  if (log_enabled(log_level::debug))
    log(log_level::debug, "step_resolver", "took ", what, " at unix_us ", unix_now_us());
}

// Any input may bring an agreement: at the leader the last report, in a
// world of one the notice itself.
void log_new_agreement(self_ptr self) {
  auto& st = self->state;
  auto& logic = *st.logic;
  if (logic.agreements() == st.logged_agreements) return;
  st.logged_agreements = logic.agreements();
  decision_recorder::process().on_agreement(logic.agreed_step(), logic.deadline_ms() == 0);
  log(log_level::info, "step_resolver", "agreed to save at step ", logic.agreed_step(),
      logic.agreed_final()       ? " (final)"
      : logic.deadline_ms() == 0 ? " (backup)"
                                 : " (grace period continues)");
}

// The protocol goes first, the log line after it.
void dispatch(self_ptr self, std::vector<outgoing> out) {
  send_out(self, std::move(out));
  log_new_agreement(self);
}

// Starts the leader's final save once it is due. While the first save is
// still written or a round is open the logic declines, and the next protocol
// message (the save committed, the round's last report) asks again: log only
// the start.
void fire_final_save_if_due(self_ptr self) {
  auto& st = self->state;
  if (auto due = st.logic->final_save_due_ms(); due && unix_now_ms() >= *due) {
    auto out = st.logic->on_final_save_due(unix_now_ms());
    if (!out.empty())
      log(log_level::info, "step_resolver", "final save of the grace period is due");
    dispatch(self, std::move(out));
  }
}

// Every due time of the final save, with the terms it came from: where a
// final save came early or late, this line says which estimate moved it. The
// first one is news; the moves of a running countdown (each new step sample)
// are for debugging.
void log_schedule(const step_resolver_state& logic, int64_t delay_ms, bool first) {
  if (!first && !log_enabled(log_level::debug)) return;
  log(first ? log_level::info : log_level::debug, "step_resolver", "final save due in ", delay_ms,
      " ms: deadline - margin ", logic.exit_margin_ms(), " ms - cycle ", logic.save_cycle_ms(),
      " ms (round ", logic.round_seconds(), " s, step ", logic.step_seconds(), " s, checkpoint ",
      logic.checkpoint_seconds(), " s, exit ", logic.exit_seconds(), " s)");
}

// A one-shot timer for the final save, armed whenever its due time changes
// (the first commit, an earlier deadline). The tick alone would start it up
// to a tick late, and with short steps and checkpoints the whole safety
// margin before the deadline is shorter than a tick. A timer left from an
// earlier due time finds nothing due and does nothing.
void arm_final_save_timer(self_ptr self) {
  auto& st = self->state;
  auto due = st.logic->final_save_due_ms();
  if (!due || *due == st.armed_due_ms) return;
  bool first = st.armed_due_ms == 0;
  st.armed_due_ms = *due;
  auto delay = std::max<int64_t>(0, *due - unix_now_ms());
  self->delayed_send(self, std::chrono::milliseconds{delay}, final_due_atom::value);
  log_schedule(*st.logic, delay, first);
}

// Samples the trainer's completed step for the step time, fires the leader's
// final save when it is due (a fallback for the timer) and starts the
// leader's periodic backup saves.
void on_tick(self_ptr self) {
  auto& st = self->state;
  auto now = unix_now_ms();
  st.logic->sample_completed_step(st.links.gate->completed_step(), now);
  fire_final_save_if_due(self);
  arm_final_save_timer(self);
  dispatch(self, st.logic->on_backup_check(now));
  self->delayed_send(self, tick_interval, tick_atom::value);
}

}  // namespace

caf::behavior step_resolver(self_ptr self, step_resolver_state::config cfg,
                            step_resolver_links links) {
  cfg.publish_to = links.phase.get();
  self->state.links = std::move(links);
  self->state.logic = std::make_unique<step_resolver_state>(cfg, *self->state.links.gate);
  self->send(self, tick_atom::value);
  return {
      [=](notice_atom, const wire::Notice& notice) {
        auto& st = self->state;
        log_taken("a notice of its own");
        // The protocol goes first: the log line and the records are not on the
        // way to the decision, and the agent sends in order.
        send_out(self, st.logic->on_local_notice(notice, unix_now_ms()));
        decision_recorder::process().on_notice();
        arm_final_save_timer(self);
        log(log_level::info, "step_resolver", "notice from ", notice.source(), ": ",
            notice.reason());
        log_new_agreement(self);
        // The first notice of this worker is recorded for the preemption
        // watcher; insert-if-absent keeps the first one.
        if (st.notices++ == 0) {
          auto record = notice;
          record.set_rank(st.logic->rank());
          self->request(st.links.client->agent(), notice_record_timeout, insert_atom::value,
                        notice_key_prefix + std::to_string(record.rank()),
                        record.SerializeAsString())
              .then([] {}, [](caf::error&) {});
        }
      },
      [=](const wire::ProtocolMessage& msg) {
        log_taken(body_name(msg));
        // A worker's own notices are logged as it takes them; this one came
        // from no worker, and the log must say why the job saves.
        if (msg.has_notice() && msg.notice().rank() == service_sender)
          log(log_level::info, "step_resolver", "notice from the coordination service's host (",
              msg.notice().source(), "): ", msg.notice().reason());
        // dispatch's two halves, with the record of the message between
        // them: a report is recorded before the agreement it completes.
        auto& logic = *self->state.logic;
        auto agreements = logic.agreements();
        send_out(self, logic.on_message(msg, unix_now_ms()));
        if (msg.has_report() && logic.agreements() != agreements)
          decision_recorder::process().on_round_completed(msg.report());
        decision_recorder::process().on_message(msg);
        log_new_agreement(self);
        fire_final_save_if_due(self);
        arm_final_save_timer(self);
      },
      [=](const peer_failure&) { self->state.logic->on_failure(); },
      [=](final_due_atom) { fire_final_save_if_due(self); },
      [=](saving_atom, int64_t) { self->state.logic->on_save_started(); },
      [=](ckpt_time_atom, double seconds) {
        self->state.logic->record_checkpoint_seconds(seconds);
        arm_final_save_timer(self);
      },
      [=](tick_atom) { on_tick(self); },
      [=](status_atom) {
        auto& logic = *self->state.logic;
        wire::ActorStatus st;
        st.set_name(step_resolver_actor_state::name);
        st.set_state(logic.is_leader() ? "leader" : "follower");
        st.set_mailbox(static_cast<int64_t>(self->mailbox().size()));
        st.set_step(self->state.links.gate->completed_step());
        st.set_phase(to_string(logic.phase()));
        (*st.mutable_metrics())["notices_total"] = static_cast<double>(self->state.notices);
        (*st.mutable_metrics())["agreement_rounds_total"] = static_cast<double>(logic.rounds());
        (*st.mutable_metrics())["agreed_step"] = static_cast<double>(logic.agreed_step());
        (*st.mutable_metrics())["deadline_unix_ms"] = static_cast<double>(logic.deadline_ms());
        return st;
      },
  };
}

caf::actor spawn_step_resolver(caf::actor_system& sys, step_resolver_state::config cfg,
                               step_resolver_links links) {
  return sys.middleman().spawn_broker(step_resolver, cfg, std::move(links));
}

}  // namespace lifeboat
