// coordination_state's messages to many ranks: a failure (an error report,
// a hang the progress tracker found, a lost rank) told to every worker once
// per generation, and rank-to-rank messages relayed.
#include "actors/coordination/coordination_state.hpp"

#include <cstdio>

#include "messages/log.hpp"

namespace lifeboat {

namespace {

// The origin of a failure that is no one rank's: the workers take a failure
// from rank -1 as the service's, whose message says what it is.
constexpr int32_t job_failure = -1;

std::string seconds_text(int64_t ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(ms) / 1000.0);
  return text;
}

}  // namespace

void coordination_state::on_error_report(int32_t rank, const wire::ErrorReport& req) {
  workers_[static_cast<size_t>(rank)].state = rank_state::error;
  // A report after the generation's first failure is almost always its echo
  // (a collective that failed because the first failed rank went away): the
  // workers hear of the first failure only, and the reporter raises it.
  if (first_failure_rank_) {
    log(log_level::info, component, rank_text(rank), "'s error after ",
        *first_failure_rank_ == job_failure ? "the job's hang"
                                            : rank_text(*first_failure_rank_) + "'s failure",
        ", not passed on: ", req.message());
    return;
  }
  first_failure_rank_ = rank;
  log(log_level::warning, component, rank_text(rank), " reported error ", req.code(), ": ",
      req.message());
  emit_event(rank, membership_event::error, req.code(), req.message());
  broadcast_failure(rank, req.code(), req.message(), false);
  fail_barriers_with(rank, errc::peer_error, rank_text(rank) + " failed: " + req.message());
}

void coordination_state::declare_hung(const progress_tracker::hang& h) {
  wire::ErrorReport report;
  report.set_code(static_cast<int32_t>(errc::hung));
  report.set_message("hang: no step completed for " + seconds_text(h.stuck_ms) +
                     " s (peers at step " + std::to_string(h.peers_step) + ", its last step " +
                     std::to_string(h.step) + ")");
  progress_.forget(h.rank);
  on_error_report(h.rank, report);
}

void coordination_state::declare_job_hung(const progress_tracker::job_hang& h) {
  auto what = "hang: no rank completed a step for " + seconds_text(h.stuck_ms) +
              " s (every rank's last step " + std::to_string(h.step) + ")";
  // 1. Ranks between steps while the others are in theirs: the others wait
  //    for them (in a collective), so they are the hung ones.
  //    Ranks whose training loop ended come first: they run no step more
  //    (ranks that run different numbers of steps).
  if (!h.outside.empty()) {
    auto& named = h.finished.empty() ? h.outside : h.finished;
    bool one = named.size() == 1;
    std::string who = one ? "this rank" : "ranks";
    for (size_t i = 0; !one && i < named.size(); ++i)
      who += (i == 0 ? " " : ", ") + std::to_string(named[i]);
    auto why =
        h.finished.empty()
            ? who + (one ? " was" : " were") + " between steps while the others waited in theirs"
            : who + (one ? " ended its training loop" : " ended their training loops") +
                  " while the others waited in their next step (do all ranks run as "
                  "many steps?)";
    wire::ErrorReport report;
    report.set_code(static_cast<int32_t>(errc::hung));
    report.set_message(what + "; " + why);
    progress_.forget(named.front());
    on_error_report(named.front(), report);
    return;
  }
  // 2. Every rank in its step: one stuck before a collective holds the rest
  //    in it, and nothing here tells which. The job fails as hung, and every
  //    rank writes its stack (the exit controller, for a hang of rank -1).
  if (first_failure_rank_) return;
  first_failure_rank_ = job_failure;
  auto message = what +
                 " while every rank was in its next step: one stuck before a collective "
                 "holds the others in it; each rank's stack is in its log";
  log(log_level::warning, component, message);
  progress_.reset();
  auto code = static_cast<int32_t>(errc::hung);
  emit_event(job_failure, membership_event::error, code, message);
  broadcast_failure(job_failure, code, message, false);
  for (int32_t r = 0; r < cfg_.world_size; ++r) fail_barriers_with(r, errc::peer_error, message);
}

template <class Pred>
void coordination_state::send_to_ranks(const wire::Envelope& env, Pred to) {
  auto first = out_.frames.size();
  for (size_t r = 0; r < workers_.size(); ++r)
    if (workers_[r].conn != 0 && to(static_cast<int32_t>(r)))
      out_.frames.emplace_back(workers_[r].conn, env);
  if (out_.frames.size() - first > 1)
    out_.broadcasts.push_back({first, out_.frames.size() - first});
}

wire::Envelope coordination_state::failure_frame(int32_t rank, int32_t code,
                                                 const std::string& message, bool lost) {
  wire::Envelope env;
  auto* f = env.mutable_failure();
  f->set_rank(rank);
  f->set_code(code);
  f->set_message(message);
  f->set_lost(lost);
  return env;
}

void coordination_state::broadcast_failure(int32_t rank, int32_t code, const std::string& message,
                                           bool lost) {
  send_to_ranks(failure_frame(rank, code, message, lost), [](int32_t) { return true; });
}

void coordination_state::on_send(int32_t rank, const wire::PeerSend& req) {
  wire::Envelope out;
  auto* d = out.mutable_delivery();
  d->set_from_rank(rank);
  d->set_channel(req.channel());
  d->set_payload(req.payload());
  if (req.to_rank() == every_rank || req.to_rank() == every_other_rank) {
    send_to_ranks(out, [&](int32_t r) { return addressed_to(req.to_rank(), r, rank); });
    return;
  }
  if (req.to_rank() < 0 || req.to_rank() >= cfg_.world_size ||
      workers_[static_cast<size_t>(req.to_rank())].conn == 0) {
    log(log_level::debug, component, "dropping message on channel ", req.channel(), " from ",
        rank_text(rank), " to absent ", rank_text(req.to_rank()));
    return;
  }
  send_frame(workers_[static_cast<size_t>(req.to_rank())].conn, std::move(out));
}

}  // namespace lifeboat
