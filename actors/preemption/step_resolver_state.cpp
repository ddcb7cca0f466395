#include "actors/preemption/step_resolver_state.hpp"

#include <algorithm>
#include <cmath>

namespace lifeboat {

namespace {

template <class Body>
outgoing make_outgoing(int32_t to, Body* (wire::ProtocolMessage::*mutable_body)(),
                       const Body& body) {
  outgoing out{to, {}};
  *(out.message.*mutable_body)() = body;
  return out;
}

}  // namespace

step_resolver_state::step_resolver_state(config cfg, step_gate& gate) : cfg_(cfg), gate_(gate) {}

void step_resolver_state::record_step_seconds(double seconds) {
  // The span of this sample held the trainer at its stop step or in a
  // snapshot: counted as training, that stall alone can make a step of
  // 20 ms look like hundreds and move the final save seconds earlier.
  if (trainer_held_) {
    trainer_held_ = false;
    return;
  }
  step_seconds_.add(seconds);
  reschedule_final_save();
}

// Off the trainer's hot path: the trainer only counts its steps. Under
// ThreadSanitizer on a loaded host the start took a second, and a first window
// from the resolver's spawn made a 20 ms step look like 1 s.
void step_resolver_state::sample_completed_step(int64_t completed_step, int64_t now_ms) {
  if (first_seen_step_ < 0) first_seen_step_ = completed_step;
  if (sampled_at_ms_ == 0) {
    if (completed_step == first_seen_step_) return;
    sampled_step_ = completed_step;
    sampled_at_ms_ = now_ms;
    return;
  }
  // A window stays open until the step moved: a step longer than the window
  // is measured whole, where restarting the window at each look would count
  // it as one window long.
  if (now_ms - sampled_at_ms_ < step_sample_ms || completed_step == sampled_step_) return;
  if (completed_step > sampled_step_)
    record_step_seconds(static_cast<double>(now_ms - sampled_at_ms_) / 1000.0 /
                        static_cast<double>(completed_step - sampled_step_));
  sampled_step_ = completed_step;
  sampled_at_ms_ = now_ms;
}

void step_resolver_state::record_checkpoint_seconds(double seconds) {
  checkpoint_seconds_.add(seconds);
  reschedule_final_save();
}

// The final save is first scheduled at the first commit, before the first
// save was measured (and, early in training, before any step was): a
// measurement that comes during the countdown must move it, or it starts at
// the deadline itself.
void step_resolver_state::reschedule_final_save() {
  if (final_due_ms_) final_due_ms_ = deadline_ms_ - exit_margin_ms() - save_cycle_ms();
}

double step_resolver_state::step_seconds() const {
  return std::max(step_seconds_.seconds(), cluster_step_seconds_);
}

double step_resolver_state::checkpoint_seconds() const {
  return std::max(checkpoint_seconds_.seconds(), cluster_checkpoint_seconds_);
}

int64_t step_resolver_state::exit_margin_ms() const {
  return std::max(min_exit_margin_ms,
                  static_cast<int64_t>(std::ceil(exit_margin_share * cfg_.grace_period_ms)));
}

// One more save cycle: the query round, the step the trainers are in, the
// save and its commit, then the commit reaching every worker, their leaving
// and the processes' end.
int64_t step_resolver_state::save_cycle_ms() const {
  auto cycle = round_seconds() + step_seconds() + checkpoint_seconds() + exit_seconds();
  return static_cast<int64_t>(std::ceil(cfg_.safety_factor * cycle * 1000.0));
}

bool step_resolver_state::too_close(int64_t now_ms) const {
  return cfg_.grace_period_ms == 0 || deadline_ms_ - now_ms <= exit_margin_ms() + save_cycle_ms();
}

void step_resolver_state::schedule_final_save(int64_t now_ms) {
  final_due_ms_ = std::max(now_ms, deadline_ms_ - exit_margin_ms() - save_cycle_ms());
}

// The earliest deadline wins. A backup round's query and commit carry none
// (0); they must not erase one known here.
bool step_resolver_state::adopt_deadline(int64_t deadline_ms) {
  if (deadline_ms == 0 || (deadline_ms_ != 0 && deadline_ms >= deadline_ms_)) return false;
  deadline_ms_ = deadline_ms;
  return true;
}

std::vector<outgoing> step_resolver_state::on_local_notice(wire::Notice notice, int64_t now_ms) {
  if (failed_) return {};
  notice.set_rank(cfg_.rank);
  if (notice.deadline_unix_ms() == 0) notice.set_deadline_unix_ms(now_ms + cfg_.grace_period_ms);
  if (is_leader()) return learn_notice(notice, now_ms);
  // A follower only learns the deadline (learn_notice sends nothing for it)
  // and passes the notice to the leader unless an earlier deadline is known.
  learn_notice(notice, now_ms);
  if (deadline_ms_ != notice.deadline_unix_ms()) return {};
  return {make_outgoing(leader_rank, &wire::ProtocolMessage::mutable_notice, notice)};
}

// Step 1: the earliest deadline wins, wherever it came from. A notice that
// does not move the deadline earlier changes nothing (repeated signals).
std::vector<outgoing> step_resolver_state::learn_notice(const wire::Notice& notice,
                                                        int64_t now_ms) {
  if (!adopt_deadline(notice.deadline_unix_ms())) return {};
  if (phase_ == phase::training) enter(phase::notice_received);
  if (!is_leader()) return {};
  auto out = act_on_notice(now_ms);
  if (out.empty())
    out.push_back(make_outgoing(every_other_rank, &wire::ProtocolMessage::mutable_notice, notice));
  return out;
}

// The leader's part of step 1: a round for the first save, or a final save
// moved earlier.
std::vector<outgoing> step_resolver_state::act_on_notice(int64_t now_ms) {
  if (final_save_decided_) return {};
  bool no_room = too_close(now_ms);
  if (round_open_) {
    round_final_ = round_final_ || no_room;
    return {};
  }
  if (!first_save_decided_) {
    // A backup save in flight becomes this notice's first save: a round
    // started now could stop a trainer before the step it must save at.
    if (save_in_flight_) {
      first_save_decided_ = true;
      schedule_final_save(now_ms);
      return {};
    }
    return start_round(no_room, now_ms);
  }
  // Step 6: an earlier deadline during the countdown moves the final save.
  schedule_final_save(now_ms);
  return {};
}

std::vector<outgoing> step_resolver_state::start_round(bool final_save, int64_t now_ms) {
  ++round_;
  round_open_ = true;
  round_final_ = final_save;
  round_started_ms_ = now_ms;
  reports_.clear();
  wire::StepQuery query;
  query.set_round(round_);
  query.set_final_save(final_save);
  query.set_deadline_unix_ms(deadline_ms_);
  std::vector<outgoing> out{
      make_outgoing(every_other_rank, &wire::ProtocolMessage::mutable_query, query)};
  // The leader answers its own query here: through the service its report
  // would cross the connection twice more. In a world of one this commits at once.
  for (auto& commit : on_report(answer_query(query), now_ms)) out.push_back(std::move(commit));
  return out;
}

std::vector<outgoing> step_resolver_state::on_message(const wire::ProtocolMessage& msg,
                                                      int64_t now_ms) {
  if (failed_) return {};
  switch (msg.body_case()) {
    case wire::ProtocolMessage::kNotice: {
      if (msg.notice().rank() != service_sender) return learn_notice(msg.notice(), now_ms);
      // Raised by the process hosting the service (preemption_watcher::
      // raise_notice), whose deadline is when it stops serving: this worker
      // saves by then, and no later than for a notice of its own (its grace
      // period; none: at once).
      auto notice = msg.notice();
      auto own = now_ms + cfg_.grace_period_ms;
      if (notice.deadline_unix_ms() == 0 || own < notice.deadline_unix_ms())
        notice.set_deadline_unix_ms(own);
      return learn_notice(notice, now_ms);
    }
    case wire::ProtocolMessage::kQuery:
      // The leader answered its own query when it sent it.
      if (is_leader()) return {};
      return {make_outgoing(leader_rank, &wire::ProtocolMessage::mutable_report,
                            answer_query(msg.query()))};
    case wire::ProtocolMessage::kReport:
      return on_report(msg.report(), now_ms);
    case wire::ProtocolMessage::kCommit:
      // The leader took its own commit when it sent it.
      if (!is_leader()) on_commit(msg.commit(), now_ms);
      return {};
    case wire::ProtocolMessage::kCommitted:
      on_save_committed(msg.committed().final_save());
      return {};
    case wire::ProtocolMessage::BODY_NOT_SET:
      break;
  }
  return {};
}

// Step 3: hold the trainer at the step it is in (it waits there until the
// commit); the report of that step goes to the leader.
wire::StepReport step_resolver_state::answer_query(const wire::StepQuery& query) {
  // Step 1 for every worker but the leader and the notice's own: the
  // deadline arrives with the query. A backup round's query carries none and
  // leaves the phase at training.
  adopt_deadline(query.deadline_unix_ms());
  if (phase_ == phase::training && deadline_ms_ != 0) enter(phase::notice_received);
  wire::StepReport report;
  report.set_round(query.round());
  report.set_rank(cfg_.rank);
  report.set_stop_step(gate_.hold_next_step());
  trainer_held_ = true;
  report.set_step_seconds(step_seconds_.seconds());
  report.set_checkpoint_seconds(checkpoint_seconds_.seconds());
  return report;
}

// Step 4: with every report in, commit the furthest stop step. No trainer is
// past it: each waits at its own stop step, at most this one.
std::vector<outgoing> step_resolver_state::on_report(const wire::StepReport& report,
                                                     int64_t now_ms) {
  if (!is_leader() || !round_open_ || report.round() != round_) return {};
  reports_[report.rank()] = report;
  if (static_cast<int32_t>(reports_.size()) < cfg_.world_size) return {};
  round_seconds_.add(static_cast<double>(now_ms - round_started_ms_) / 1000.0);
  // Each worker reports its current estimates: the slowest worker's count,
  // as of this round (an earlier round's slow sample is already in its median).
  int64_t step = 0;
  cluster_step_seconds_ = 0;
  cluster_checkpoint_seconds_ = 0;
  for (auto& [rank, r] : reports_) {
    step = std::max(step, r.stop_step());
    cluster_step_seconds_ = std::max(cluster_step_seconds_, r.step_seconds());
    cluster_checkpoint_seconds_ = std::max(cluster_checkpoint_seconds_, r.checkpoint_seconds());
  }
  if (!round_final_ && deadline_ms_ != 0 && too_close(now_ms)) round_final_ = true;
  round_open_ = false;
  // A round with no deadline known is a backup save: a later notice still
  // needs a round of its own.
  if (round_final_)
    final_save_decided_ = true;
  else if (deadline_ms_ != 0)
    first_save_decided_ = true;
  wire::StepCommit commit;
  commit.set_round(round_);
  commit.set_step(step);
  commit.set_final_save(round_final_);
  commit.set_deadline_unix_ms(deadline_ms_);
  on_commit(commit, now_ms);
  return {make_outgoing(every_other_rank, &wire::ProtocolMessage::mutable_commit, commit)};
}

void step_resolver_state::on_commit(const wire::StepCommit& commit, int64_t now_ms) {
  gate_.commit(commit.step(), commit.final_save(), commit.deadline_unix_ms());
  agreed_step_ = commit.step();
  agreed_final_ = commit.final_save();
  ++agreements_;
  adopt_deadline(commit.deadline_unix_ms());
  enter(phase::checkpoint_scheduled);
  save_in_flight_ = !commit.final_save();
  if (is_leader() && !commit.final_save() && deadline_ms_ != 0) schedule_final_save(now_ms);
}

std::vector<outgoing> step_resolver_state::on_final_save_due(int64_t now_ms) {
  // While the first save is written nothing starts; the actor asks again on
  // its next tick.
  if (!is_leader() || failed_ || !first_save_decided_ || final_save_decided_ || round_open_ ||
      save_in_flight_)
    return {};
  final_due_ms_.reset();
  return start_round(true, now_ms);
}

std::vector<outgoing> step_resolver_state::on_backup_check(int64_t now_ms) {
  if (!is_leader() || failed_ || cfg_.backup_interval_ms <= 0 || round_open_ || save_in_flight_ ||
      deadline_ms_ != 0)
    return {};
  if (last_backup_ms_ == 0) last_backup_ms_ = now_ms;
  if (now_ms - last_backup_ms_ < cfg_.backup_interval_ms) return {};
  last_backup_ms_ = now_ms;
  return start_round(false, now_ms);
}

void step_resolver_state::enter(lifeboat::phase next) {
  phase_ = next;
  if (cfg_.publish_to != nullptr) cfg_.publish_to->set(next);
}

void step_resolver_state::on_save_started() {
  trainer_held_ = true;
  if (phase_ != phase::exiting) enter(phase::saving);
}

void step_resolver_state::on_save_committed(bool final_save) {
  save_in_flight_ = false;
  if (final_save)
    enter(phase::exiting);
  else if (deadline_ms_ != 0)
    enter(phase::grace_countdown);
  else
    enter(phase::training);
}

}  // namespace lifeboat
