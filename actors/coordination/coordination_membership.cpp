// coordination_state's membership: joins (authenticated against the cluster
// token), leaves, heartbeats and their timeout, lost ranks, and the rows and
// events that report them.
#include "actors/coordination/coordination_state.hpp"

#include <algorithm>

#include "actors/coordination/coordination_auth.hpp"
#include "messages/log.hpp"

namespace lifeboat {

namespace {

// How often the service compares every rank's step time with the cluster's.
constexpr int64_t straggler_check_interval_ms = 1000;

}  // namespace

void coordination_state::on_join(conn_id conn, const wire::JoinRequest& req, int64_t now_ms) {
  if (req.protocol_version() != coordination_protocol_version) {
    refuse(conn, errc::version_mismatch,
           "worker speaks coordination protocol version " + std::to_string(req.protocol_version()) +
               ", service speaks version " + std::to_string(coordination_protocol_version));
    return;
  }
  auto expected =
      join_mac(cfg_.token, conns_[conn].nonce, req.rank(), req.world_size(), req.incarnation());
  if (!mac_equal(expected, req.mac())) {
    refuse(conn, errc::refused, "authentication failed: wrong cluster token");
    return;
  }
  // A worker that sent no challenge of full length could be fooled by a
  // replayed proof; every worker of this version sends one.
  if (req.nonce().size() != coordination_nonce_bytes) {
    refuse(conn, errc::refused, "join without the worker's challenge for the service");
    return;
  }
  if (req.world_size() != cfg_.world_size) {
    refuse(conn, errc::refused,
           "world size " + std::to_string(req.world_size()) + " does not match the service's " +
               std::to_string(cfg_.world_size));
    return;
  }
  if (req.rank() < 0 || req.rank() >= cfg_.world_size) {
    refuse(conn, errc::refused,
           rank_text(req.rank()) + " is outside [0, " + std::to_string(cfg_.world_size) + ")");
    return;
  }
  if (req.incarnation() < generation_) {
    refuse(conn, errc::refused,
           "stale incarnation " + std::to_string(req.incarnation()) + " (current generation " +
               std::to_string(generation_) + ")");
    return;
  }
  if (req.incarnation() > generation_) start_generation(req.incarnation());
  // A rank that took part in this generation and is gone from it (left at
  // its handler's end, lost, failed) joins again: the job was started again
  // without a new generation (its workers restarted by something that sets
  // no LIFEBOAT_RESTART_COUNT, against a coordinator that stayed up), or a
  // worker made a second handler (a script's next phase). The generation's
  // keys and barriers were as its first session left them: a rerun failed
  // at its first barrier naming ranks that had left, a second handler's
  // save collided with the first's (already_exists). With no rank joined
  // any more, a new session of the generation starts from nothing; while
  // one still is, the join waits for them to leave (rejoin_hold_ms), then
  // is refused, named.
  if (const auto& was = workers_[static_cast<size_t>(req.rank())];
      was.state != rank_state::joining && was.conn == 0) {
    if (auto joined = joined_ranks(); !joined.empty()) {
      if (auto until = conns_[conn].held_until_ms; until != 0 && until <= now_ms) {
        refuse(conn, errc::refused,
               rank_text(req.rank()) + " took part in generation " + std::to_string(generation_) +
                   " (" + to_string(was.state) + " now) and joins it again while " + joined +
                   " still take part: restart every worker, or give the next run its own "
                   "generation (LIFEBOAT_RESTART_COUNT)");
        return;
      }
      hold_rejoin(conn, req, now_ms);
      return;
    }
    log(log_level::info, component, rank_text(req.rank()), " joins generation ", generation_,
        " again, no rank joined: a new session of it starts (the last one's keys and barriers "
        "dropped)");
    start_session();
  }
  auto& w = workers_[static_cast<size_t>(req.rank())];
  if (w.conn != 0) {
    refuse(conn, errc::refused, rank_text(req.rank()) + " is already joined");
    return;
  }
  w.state = rank_state::alive;
  w.conn = conn;
  w.last_heartbeat_ms = now_ms;
  heartbeat_due_.lower_to(now_ms + cfg_.heartbeat_timeout_ms);
  progress_.set_hang_timeout_ms(req.hang_timeout_ms());
  progress_.forget(req.rank());
  conns_[conn].rank = req.rank();
  limits_.forget(conn);
  wire::Envelope env;
  env.mutable_join_reply()->set_ok(true);
  env.mutable_join_reply()->set_generation(generation_);
  env.mutable_join_reply()->set_heartbeat_interval_ms(heartbeat_interval_ms());
  env.mutable_join_reply()->set_proof(
      service_proof(cfg_.token, req.nonce(), req.rank(), req.world_size(), generation_));
  send_frame(conn, std::move(env));
  emit_event(req.rank(), membership_event::joined);
  log(log_level::info, component, rank_text(req.rank()), " joined (generation ", generation_, ")");
}

std::string coordination_state::joined_ranks() const {
  std::string joined;
  for (size_t r = 0; r < workers_.size(); ++r)
    if (workers_[r].conn != 0)
      joined += (joined.empty() ? "" : ", ") + rank_text(static_cast<int32_t>(r));
  return joined;
}

void coordination_state::hold_rejoin(conn_id conn, const wire::JoinRequest& req, int64_t now_ms) {
  auto& c = conns_[conn];
  if (c.held_until_ms == 0) {
    c.held_until_ms = now_ms + rejoin_hold_ms;
    rejoin_due_.lower_to(c.held_until_ms);
    log(log_level::info, component, rank_text(req.rank()), " joins generation ", generation_,
        " again while ", joined_ranks(), " still take part: its join waits up to ", rejoin_hold_ms,
        " ms for them to leave");
  }
  c.held_join = req;
}

void coordination_state::settle_held_joins(int64_t now_ms) {
  if (!rejoin_due_.due_ms()) return;
  // After every frame while a join is held: a look, not joined_ranks' text.
  bool none_joined =
      std::none_of(workers_.begin(), workers_.end(), [](const worker& w) { return w.conn != 0; });
  if (!none_joined && !rejoin_due_.reached(now_ms)) return;
  std::vector<std::pair<conn_id, wire::JoinRequest>> settle;
  std::optional<int64_t> next;
  for (auto& [conn, c] : conns_) {
    if (!c.held_join) continue;
    if (none_joined || c.held_until_ms <= now_ms) {
      settle.emplace_back(conn, std::move(*c.held_join));
      c.held_join.reset();
    } else if (!next || c.held_until_ms < *next)
      next = c.held_until_ms;
  }
  rejoin_due_.reset(next);
  // on_join joins each (the first starts the new session), or refuses one
  // held past its time (held_until_ms stays set).
  for (auto& [conn, req] : settle)
    if (conns_.count(conn) > 0) on_join(conn, req, now_ms);
}

void coordination_state::on_leave(conn_id conn, int32_t rank, const wire::Leave& req) {
  auto& w = workers_[static_cast<size_t>(rank)];
  w.state = rank_state::left;
  w.conn = 0;
  drop_requests_of(conn);
  reply(conn, req.id());
  // The service closes a connection that left (after the reply): what the
  // worker sent before it saw the reply (a heartbeat, a report of an error
  // that echoed its peers') would otherwise arrive on a connection that is
  // no one's and look like a stranger's request; and a peer that left and
  // kept it open would hold it unbounded.
  close(conn);
  conns_.erase(conn);
  progress_.forget(rank);
  emit_event(rank, membership_event::left);
  log(log_level::info, component, rank_text(rank), " left");
  // A rank leaves when it gives up after a failure: a loss still to be told
  // is where that began, and names its ranks when it fails the barrier.
  fail_barriers_with(rank, errc::peer_lost, rank_text(rank) + " left", true);
}

void coordination_state::on_heartbeat(int32_t rank, const wire::Heartbeat& hb, int64_t now_ms) {
  auto& w = workers_[static_cast<size_t>(rank)];
  w.last_heartbeat_ms = now_ms;
  w.step = hb.step();
  // The answer tells the worker this service still hears it: without it, a
  // worker cut off by a partition would wait on a service that is silent.
  wire::Envelope answer;
  answer.mutable_heartbeat();
  send_frame(w.conn, std::move(answer));
  if (!hb.status().empty()) w.status = hb.status();
  progress_.on_heartbeat(rank, hb.step(), hb.blocked_ms(), hb.paused(), now_ms, hb.step_age_ms(),
                         hb.in_step(), hb.finished());
  if (w.state == rank_state::alive) {
    if (auto hang = progress_.find_hang(rank)) return declare_hung(*hang);
    if (auto hang = progress_.find_job_hang(rank)) return declare_job_hung(*hang);
  }
  // Comparing every rank with the cluster costs a pass over all of them:
  // once per interval, not at every heartbeat.
  if (now_ms < next_straggler_check_ms_) return;
  next_straggler_check_ms_ = now_ms + straggler_check_interval_ms;
  auto reference = progress_.cluster_median_ms();
  for (auto straggler : progress_.take_new_stragglers())
    log(log_level::warning, component, rank_text(straggler), " is a straggler: median step ",
        progress_.stats(straggler, reference).median_seconds, " s, cluster median ",
        reference / 1000.0, " s");
}

int64_t coordination_state::heartbeat_interval_ms() const {
  return heartbeat_interval_for(std::chrono::milliseconds{cfg_.heartbeat_timeout_ms}).count();
}

void coordination_state::expire_heartbeats(int64_t now_ms) {
  // The other ranks of a host cut off fall silent within one heartbeat
  // interval of the first: their losses are reported together.
  auto report_due_ms = now_ms + heartbeat_interval_ms();
  for (size_t r = 0; r < workers_.size(); ++r) {
    auto& w = workers_[r];
    if (w.conn != 0 && now_ms - w.last_heartbeat_ms >= cfg_.heartbeat_timeout_ms)
      mark_lost(static_cast<int32_t>(r),
                "no heartbeat for " + std::to_string(now_ms - w.last_heartbeat_ms) + " ms",
                report_due_ms, true);
  }
  schedule_heartbeat_check();
}

void coordination_state::schedule_heartbeat_check() {
  heartbeat_due_.reset();
  for (auto& w : workers_)
    if (w.conn != 0) heartbeat_due_.lower_to(w.last_heartbeat_ms + cfg_.heartbeat_timeout_ms);
}

void coordination_state::forgive_stall(int64_t stalled_ms, int64_t now_ms) {
  log(log_level::warning, component, "this service did not run for about ", stalled_ms,
      " ms (its process stopped or its host paused): that time is not counted against the "
      "workers' heartbeats");
  for (auto& w : workers_)
    if (w.conn != 0) w.last_heartbeat_ms = std::min(now_ms, w.last_heartbeat_ms + stalled_ms);
  schedule_heartbeat_check();
}

void coordination_state::mark_lost(int32_t rank, const std::string& why, int64_t report_due_ms,
                                   bool silent) {
  auto& w = workers_[static_cast<size_t>(rank)];
  auto conn = w.conn;
  w.state = rank_state::lost;
  w.conn = 0;
  drop_requests_of(conn);
  // A rank lost for its silence may live on (stopped, frozen): told why
  // before its connection closes, it names itself when it runs again, not a
  // service that went away (rank 0's, under torchrun).
  if (silent)
    send_frame(conn, failure_frame(rank, static_cast<int32_t>(errc::peer_lost), why, true));
  close(conn);
  conns_.erase(conn);
  progress_.forget(rank);
  if (!first_failure_rank_) first_failure_rank_ = rank;
  log(log_level::warning, component, rank_text(rank), " lost: ", why);
  emit_event(rank, membership_event::lost, static_cast<int32_t>(errc::peer_lost), why).silent =
      silent;
  // The survivors hear of it a moment later, with the losses that come with
  // it: each reports the first failure it hears, and a node gone named by
  // one of its ranks hides that the whole node is gone.
  pending_losses_.push_back({rank, why});
  losses_due_.lower_to(report_due_ms);
}

void coordination_state::report_losses() {
  std::string together;
  if (pending_losses_.size() > 1) {
    together = " (lost together: ";
    for (size_t i = 0; i < pending_losses_.size(); ++i)
      together += (i == 0 ? "" : ", ") + rank_text(pending_losses_[i].rank);
    together += ")";
  }
  auto code = static_cast<int32_t>(errc::peer_lost);
  for (auto& loss : pending_losses_) {
    auto why = loss.why + together;
    broadcast_failure(loss.rank, code, why, true);
    fail_barriers_with(loss.rank, errc::peer_lost, rank_text(loss.rank) + " lost: " + why);
  }
  pending_losses_.clear();
  losses_due_.reset();
}

membership_event& coordination_state::emit_event(int32_t rank, int32_t kind, int32_t code,
                                                 std::string message) {
  out_.events.push_back(membership_event{rank, kind, code, std::move(message), generation_});
  return out_.events.back();
}

std::vector<wire::WorkerInfo> coordination_state::workers(int64_t now_ms) const {
  std::vector<wire::WorkerInfo> result;
  auto reference = progress_.cluster_median_ms();
  for (size_t r = 0; r < workers_.size(); ++r) {
    auto& w = workers_[r];
    wire::WorkerInfo info;
    info.set_rank(static_cast<int32_t>(r));
    auto times = progress_.stats(static_cast<int32_t>(r), reference);
    info.set_step_seconds_median(times.median_seconds);
    info.set_step_seconds_p99(times.p99_seconds);
    info.set_straggler(times.straggler);
    info.set_step(w.step);
    info.set_last_heartbeat_ms(w.last_heartbeat_ms < 0 ? -1 : now_ms - w.last_heartbeat_ms);
    info.set_state(to_string(w.state));
    result.push_back(std::move(info));
  }
  return result;
}

std::vector<membership_event> coordination_state::present_workers() const {
  std::vector<membership_event> result;
  for (size_t r = 0; r < workers_.size(); ++r) {
    auto rank = static_cast<int32_t>(r);
    if (workers_[r].state == rank_state::alive)
      result.push_back(membership_event{rank, membership_event::joined, 0, {}, generation_});
    else if (workers_[r].state == rank_state::error)
      result.push_back(membership_event{rank, membership_event::error, 0, {}, generation_});
  }
  return result;
}

const std::string& coordination_state::reported_status(int32_t rank) const {
  static const std::string none;
  if (rank < 0 || rank >= cfg_.world_size) return none;
  return workers_[static_cast<size_t>(rank)].status;
}

}  // namespace lifeboat
