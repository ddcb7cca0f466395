// coordination_state's core: connections from accept to close, the dispatch
// of each joined rank's requests, the timer, generations and reset, and the
// output queue. The requests themselves are served in coordination_kv.cpp,
// coordination_barriers.cpp, coordination_membership.cpp and
// coordination_broadcast.cpp.
#include "actors/coordination/coordination_state.hpp"

#include <algorithm>

#include "actors/coordination/coordination_auth.hpp"
#include "messages/log.hpp"

namespace lifeboat {

coordination_state::coordination_state(config cfg)
    : cfg_(std::move(cfg)),
      limits_(cfg_.join_bound_ms, cfg_.max_unjoined),
      workers_(static_cast<size_t>(std::max(cfg_.world_size, 0))),
      progress_(std::max(cfg_.world_size, 0), 0) {}

const char* coordination_state::to_string(rank_state x) {
  switch (x) {
    case rank_state::joining:
      return "joining";
    case rank_state::alive:
      return "alive";
    case rank_state::left:
      return "left";
    case rank_state::lost:
      return "lost";
    case rank_state::error:
      return "error";
  }
  return "unknown";
}

std::string coordination_state::rank_text(int32_t rank) { return "rank " + std::to_string(rank); }

void coordination_state::on_connect(conn_id conn, std::string nonce, int64_t now_ms) {
  // Each waiting connection costs a socket and a buffer: a flood of them
  // must not exhaust the service, so beyond the bound they are not served.
  if (!limits_.admit(conn, now_ms)) {
    log(log_level::warning, component, "closing connection ", conn, ": already ",
        limits_.unjoined(), " connections waiting to join");
    close(conn);
    return;
  }
  wire::Envelope env;
  auto* hello = env.mutable_hello();
  hello->set_protocol_version(coordination_protocol_version);
  hello->set_nonce(nonce);
  conns_[conn].nonce = std::move(nonce);
  send_frame(conn, std::move(env));
}

void coordination_state::on_frame(conn_id conn, const wire::Envelope& env, int64_t now_ms) {
  auto i = conns_.find(conn);
  if (i == conns_.end()) return;
  auto rank = i->second.rank;
  if (env.body_case() == wire::Envelope::kJoin) {
    if (rank >= 0) {
      refuse(conn, errc::invalid_argument, "already joined as " + rank_text(rank));
      return;
    }
    on_join(conn, env.join(), now_ms);
    return;
  }
  // Nothing but a join is served before the peer proved it holds the token.
  if (rank < 0) {
    drop_unjoined(conn, "request before a successful join");
    return;
  }
  on_request(conn, rank, env, now_ms);
  settle_held_joins(now_ms);
}

void coordination_state::on_request(conn_id conn, int32_t rank, const wire::Envelope& env,
                                    int64_t now_ms) {
  switch (env.body_case()) {
    case wire::Envelope::kHeartbeat:
      on_heartbeat(rank, env.heartbeat(), now_ms);
      return;
    case wire::Envelope::kLeave:
      on_leave(conn, rank, env.leave());
      return;
    case wire::Envelope::kInsert:
      on_insert(conn, env.insert());
      return;
    case wire::Envelope::kGet:
      on_get(conn, env.get(), now_ms);
      return;
    case wire::Envelope::kTryGet:
      on_try_get(conn, env.try_get());
      return;
    case wire::Envelope::kGetPrefix:
      on_get_prefix(conn, env.get_prefix());
      return;
    case wire::Envelope::kErasePrefix:
      on_erase_prefix(conn, env.erase_prefix());
      return;
    case wire::Envelope::kCancel:
      on_cancel(conn, env.cancel().id());
      return;
    case wire::Envelope::kBarrier:
      on_barrier(conn, rank, env.barrier(), now_ms);
      return;
    case wire::Envelope::kError:
      on_error_report(rank, env.error());
      return;
    case wire::Envelope::kSend:
      on_send(rank, env.send());
      return;
    default:
      log(log_level::warning, component, "closing connection of ", rank_text(rank),
          ": unexpected message ", static_cast<int>(env.body_case()));
      mark_lost(rank, "sent an unexpected message", now_ms + closed_loss_window_ms, false);
      return;
  }
}

void coordination_state::on_disconnect(conn_id conn, int64_t now_ms) {
  auto i = conns_.find(conn);
  if (i == conns_.end()) return;
  auto rank = i->second.rank;
  if (rank >= 0) {
    mark_lost(rank, "connection closed without leave", now_ms + closed_loss_window_ms, false);
    settle_held_joins(now_ms);
    return;
  }
  drop_requests_of(conn);
  limits_.forget(conn);
  conns_.erase(i);
}

void coordination_state::on_process_exit(int32_t rank, uint32_t generation, const std::string& how,
                                         int64_t now_ms) {
  if (rank < 0 || rank >= cfg_.world_size || generation < generation_) return;
  if (generation > generation_) start_generation(generation);
  auto& w = workers_[static_cast<size_t>(rank)];
  if (w.state == rank_state::joining)
    mark_lost(rank, "its process " + how + " before it joined", now_ms + closed_loss_window_ms,
              false);
}

void coordination_state::on_tick(int64_t now_ms) {
  for (auto conn : limits_.take_expired(now_ms))
    drop_unjoined(conn, "not joined within " + std::to_string(limits_.join_bound_ms()) + " ms");
  if (request_due_.reached(now_ms)) {
    // The scans lower the floor again to the earliest request they keep.
    request_due_.reset();
    expire_gets(now_ms);
    expire_barriers(now_ms);
  }
  if (heartbeat_due_.reached(now_ms)) expire_heartbeats(now_ms);
  if (losses_due_.reached(now_ms)) report_losses();
  settle_held_joins(now_ms);
}

std::optional<int64_t> coordination_state::next_deadline_ms() const {
  std::optional<int64_t> result;
  auto consider = [&](int64_t t) {
    if (!result || t < *result) result = t;
  };
  if (auto due = request_due_.due_ms()) consider(*due);
  if (auto due = heartbeat_due_.due_ms()) consider(*due);
  if (auto due = losses_due_.due_ms()) consider(*due);
  if (auto due = rejoin_due_.due_ms()) consider(*due);
  if (auto join_due = limits_.next_deadline_ms()) consider(*join_due);
  return result;
}

void coordination_state::reset() {
  for (auto& [key, w] : getters_)
    reply(w.conn, w.id, errc::cancelled, "coordination service reset");
  for (auto& [name, b] : barriers_)
    for (auto& [r, w] : b.arrived)
      reply(w.conn, w.id, errc::cancelled, "coordination service reset");
  for (auto& [conn, c] : conns_) {
    close(conn);
    limits_.forget(conn);
  }
  conns_.clear();
  getters_.clear();
  barriers_.clear();
  kv_.clear();
  workers_.assign(workers_.size(), worker{});
  progress_.reset();
  first_failure_rank_.reset();
  heartbeat_due_.reset();
  request_due_.reset();
  pending_losses_.clear();
  losses_due_.reset();
}

void coordination_state::start_generation(uint32_t generation) {
  log(log_level::info, component, "generation ", generation, " starts; dropping generation ",
      generation_);
  start_session();
  generation_ = generation;
}

void coordination_state::start_session() {
  // The joining connection belongs to the new session: keep it open.
  std::map<conn_id, connection> keep;
  for (auto& [conn, c] : conns_)
    if (c.rank < 0) keep.emplace(conn, c);
  for (auto& [conn, c] : keep) conns_.erase(conn);
  reset();
  conns_ = std::move(keep);
}

void coordination_state::refuse(conn_id conn, errc code, const std::string& why) {
  log(log_level::warning, component, "refusing join on connection ", conn, ": ", why);
  wire::Envelope env;
  auto* r = env.mutable_join_reply();
  r->set_ok(false);
  r->set_message(std::string{lifeboat::to_string(code)} + ": " + why);
  send_frame(conn, std::move(env));
  close(conn);
  limits_.forget(conn);
  conns_.erase(conn);
}

void coordination_state::drop_unjoined(conn_id conn, const std::string& why) {
  log(log_level::warning, component, "closing connection ", conn, ": ", why);
  close(conn);
  limits_.forget(conn);
  conns_.erase(conn);
}

void coordination_state::send_frame(conn_id conn, wire::Envelope env) {
  out_.frames.emplace_back(conn, std::move(env));
}

void coordination_state::reply(conn_id conn, uint64_t id, errc code, const std::string& why) {
  wire::Envelope env;
  auto* r = env.mutable_reply();
  r->set_id(id);
  r->set_error_code(static_cast<uint32_t>(code));
  r->set_error_message(why);
  send_frame(conn, std::move(env));
}

void coordination_state::close(conn_id conn) {
  if (conn != 0) out_.closes.push_back(conn);
}

coordination_output coordination_state::take_output() {
  coordination_output result;
  std::swap(result, out_);
  return result;
}

}  // namespace lifeboat
