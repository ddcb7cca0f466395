#include "actors/coordination/coordination_state.hpp"

#include <algorithm>
#include <cstdio>

#include "actors/coordination/coordination_auth.hpp"
#include "actors/preemption/protocol.hpp"
#include "messages/log.hpp"

namespace lifeboat {

namespace {

constexpr const char* component = "coordination_service";
// How often the service compares every rank's step time with the cluster's.
constexpr int64_t straggler_check_interval_ms = 1000;

std::string collapse_slashes(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  for (char c : in)
    if (c != '/' || out.empty() || out.back() != '/') out.push_back(c);
  return out;
}

std::string rank_text(int32_t rank) { return "rank " + std::to_string(rank); }

}  // namespace

std::string normalize_key(const std::string& key) {
  auto out = collapse_slashes(key);
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string normalize_prefix(const std::string& prefix) { return collapse_slashes(prefix); }

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
}

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
  env.mutable_join_reply()->set_proof(
      service_proof(cfg_.token, req.nonce(), req.rank(), req.world_size(), generation_));
  send_frame(conn, std::move(env));
  emit_event(req.rank(), membership_event::joined);
  log(log_level::info, component, rank_text(req.rank()), " joined (generation ", generation_, ")");
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
    case wire::Envelope::kTryGet: {
      auto i = kv_.find(normalize_key(env.try_get().key()));
      wire::Envelope out;
      auto* r = out.mutable_reply();
      r->set_id(env.try_get().id());
      if (i != kv_.end()) {
        r->set_found(true);
        r->set_value(i->second);
      }
      send_frame(conn, std::move(out));
      return;
    }
    case wire::Envelope::kGetPrefix: {
      wire::Envelope out;
      auto* r = out.mutable_reply();
      r->set_id(env.get_prefix().id());
      for (auto& [key, value] : snapshot(env.get_prefix().prefix())) {
        auto* kv = r->add_entries();
        kv->set_key(key);
        kv->set_value(value);
      }
      send_frame(conn, std::move(out));
      return;
    }
    case wire::Envelope::kErasePrefix: {
      auto prefix = normalize_prefix(env.erase_prefix().prefix());
      auto first = kv_.lower_bound(prefix);
      auto last = first;
      while (last != kv_.end() && last->first.compare(0, prefix.size(), prefix) == 0) ++last;
      kv_.erase(first, last);
      reply(conn, env.erase_prefix().id());
      return;
    }
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
      mark_lost(rank, "sent an unexpected message");
      return;
  }
}

void coordination_state::on_insert(conn_id conn, const wire::KvInsert& req) {
  auto key = normalize_key(req.key());
  if (key.empty()) {
    reply(conn, req.id(), errc::invalid_argument, "empty key");
    return;
  }
  if (!kv_.emplace(key, req.value()).second) {
    reply(conn, req.id(), errc::already_exists, "key " + key);
    return;
  }
  auto [first, last] = getters_.equal_range(key);
  for (auto i = first; i != last; ++i) {
    wire::Envelope out;
    auto* r = out.mutable_reply();
    r->set_id(i->second.id);
    r->set_found(true);
    r->set_value(req.value());
    send_frame(i->second.conn, std::move(out));
  }
  getters_.erase(first, last);
  reply(conn, req.id());
}

void coordination_state::on_get(conn_id conn, const wire::KvGet& req, int64_t now_ms) {
  auto key = normalize_key(req.key());
  auto i = kv_.find(key);
  if (i != kv_.end()) {
    wire::Envelope out;
    auto* r = out.mutable_reply();
    r->set_id(req.id());
    r->set_found(true);
    r->set_value(i->second);
    send_frame(conn, std::move(out));
    return;
  }
  if (req.timeout_ms() <= 0) {
    reply(conn, req.id(), errc::timeout, "key " + key);
    return;
  }
  if (!admit_blocking(conn, req.id(), "get of key " + key)) return;
  getters_.emplace(key, waiter{conn, req.id(), now_ms + req.timeout_ms()});
  request_due_.lower_to(now_ms + req.timeout_ms());
}

void coordination_state::on_barrier(conn_id conn, int32_t rank, const wire::BarrierRequest& req,
                                    int64_t now_ms) {
  std::vector<int32_t> participants(req.participants().begin(), req.participants().end());
  if (participants.empty())
    for (int32_t r = 0; r < cfg_.world_size; ++r) participants.push_back(r);
  std::sort(participants.begin(), participants.end());
  participants.erase(std::unique(participants.begin(), participants.end()), participants.end());
  if (participants.front() < 0 || participants.back() >= cfg_.world_size) {
    reply(conn, req.id(), errc::invalid_argument,
          "barrier " + req.name() + ": participant out of range");
    return;
  }
  if (!std::binary_search(participants.begin(), participants.end(), rank)) {
    reply(conn, req.id(), errc::invalid_argument,
          "barrier " + req.name() + ": " + rank_text(rank) + " is not a participant");
    return;
  }
  // A participant that can no longer arrive fails the barrier at once rather
  // than at its timeout. One that failed or was lost is named before one that
  // left: workers leave when they give up after a peer's failure, so the
  // failure is where it began.
  auto state_of = [&](int32_t p) { return workers_[static_cast<size_t>(p)].state; };
  auto gone = std::find_if(participants.begin(), participants.end(), [&](int32_t p) {
    return state_of(p) == rank_state::lost || state_of(p) == rank_state::error;
  });
  if (gone == participants.end())
    gone = std::find_if(participants.begin(), participants.end(),
                        [&](int32_t p) { return state_of(p) == rank_state::left; });
  if (gone != participants.end()) {
    auto state = state_of(*gone);
    auto code = state == rank_state::error ? errc::peer_error : errc::peer_lost;
    reply(conn, req.id(), code,
          "barrier " + req.name() + ": " + rank_text(*gone) + " is " + to_string(state));
    return;
  }
  if (!admit_blocking(conn, req.id(), "barrier " + req.name())) return;
  auto& b = barriers_[req.name()];
  if (b.arrived.empty()) b.participants = participants;
  if (b.participants != participants) {
    reply(conn, req.id(), errc::invalid_argument,
          "barrier " + req.name() + ": participants differ from the other arrivals'");
    return;
  }
  auto due = now_ms + std::max<int64_t>(req.timeout_ms(), 0);
  if (!b.arrived.emplace(rank, waiter{conn, req.id(), due}).second) {
    reply(conn, req.id(), errc::invalid_argument,
          "barrier " + req.name() + ": " + rank_text(rank) + " is already waiting");
    return;
  }
  request_due_.lower_to(due);
  if (b.arrived.size() < b.participants.size()) return;
  for (auto& [r, w] : b.arrived) reply(w.conn, w.id);
  barriers_.erase(req.name());
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
  // A phase this service does not know (a newer worker's) is left out.
  if (auto reported = phase_from_string(hb.phase())) w.reported_phase = reported;
  progress_.on_heartbeat(rank, hb.step(), hb.blocked_ms(), w.reported_phase == phase::saving,
                         now_ms, hb.step_age_ms());
  if (w.state == rank_state::alive)
    if (auto hang = progress_.find_hang(rank)) return declare_hung(*hang);
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

void coordination_state::declare_hung(const progress_tracker::hang& h) {
  char stuck[32];
  std::snprintf(stuck, sizeof stuck, "%.1f", static_cast<double>(h.stuck_ms) / 1000.0);
  wire::ErrorReport report;
  report.set_code(static_cast<int32_t>(errc::hung));
  report.set_message(std::string{"hang: no step completed for "} + stuck + " s (peers at step " +
                     std::to_string(h.peers_step) + ", its last step " + std::to_string(h.step) +
                     ")");
  progress_.forget(h.rank);
  on_error_report(h.rank, report);
}

void coordination_state::on_error_report(int32_t rank, const wire::ErrorReport& req) {
  workers_[static_cast<size_t>(rank)].state = rank_state::error;
  // A report after the generation's first failure is almost always its echo
  // (a collective that failed because the first failed rank went away): the
  // workers hear of the first failure only, and the reporter raises it.
  if (first_failure_rank_) {
    log(log_level::info, component, rank_text(rank), "'s error after ",
        rank_text(*first_failure_rank_), "'s failure, not passed on: ", req.message());
    return;
  }
  first_failure_rank_ = rank;
  log(log_level::warning, component, rank_text(rank), " reported error ", req.code(), ": ",
      req.message());
  emit_event(rank, membership_event::error, req.code(), req.message());
  broadcast_failure(rank, req.code(), req.message(), false);
  fail_barriers_with(rank, errc::peer_error, rank_text(rank) + " failed: " + req.message());
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

void coordination_state::on_leave(conn_id conn, int32_t rank, const wire::Leave& req) {
  auto& w = workers_[static_cast<size_t>(rank)];
  w.state = rank_state::left;
  w.conn = 0;
  conns_[conn].rank = -1;
  drop_requests_of(conn);
  reply(conn, req.id());
  progress_.forget(rank);
  emit_event(rank, membership_event::left);
  log(log_level::info, component, rank_text(rank), " left");
  fail_barriers_with(rank, errc::peer_lost, rank_text(rank) + " left");
}

void coordination_state::on_cancel(conn_id conn, uint64_t id) {
  for (auto i = getters_.begin(); i != getters_.end(); ++i) {
    if (i->second.conn == conn && i->second.id == id) {
      reply(conn, id, errc::cancelled, "get of key " + i->first);
      getters_.erase(i);
      return;
    }
  }
  for (auto& [name, b] : barriers_) {
    for (auto i = b.arrived.begin(); i != b.arrived.end(); ++i) {
      if (i->second.conn == conn && i->second.id == id) {
        reply(conn, id, errc::cancelled, "barrier " + name);
        b.arrived.erase(i);
        if (b.arrived.empty()) barriers_.erase(name);
        return;
      }
    }
  }
}

void coordination_state::on_disconnect(conn_id conn, int64_t) {
  auto i = conns_.find(conn);
  if (i == conns_.end()) return;
  auto rank = i->second.rank;
  if (rank >= 0) {
    mark_lost(rank, "connection closed without leave");
    return;
  }
  drop_requests_of(conn);
  limits_.forget(conn);
  conns_.erase(i);
}

void coordination_state::on_process_exit(int32_t rank, uint32_t generation,
                                         const std::string& how) {
  if (rank < 0 || rank >= cfg_.world_size || generation < generation_) return;
  if (generation > generation_) start_generation(generation);
  auto& w = workers_[static_cast<size_t>(rank)];
  if (w.state == rank_state::joining) mark_lost(rank, "its process " + how + " before it joined");
}

void coordination_state::on_tick(int64_t now_ms) {
  for (auto conn : limits_.take_expired(now_ms))
    drop_unjoined(conn, "not joined within " + std::to_string(limits_.join_bound_ms()) + " ms");
  if (request_due_.reached(now_ms)) expire_requests(now_ms);
  if (heartbeat_due_.reached(now_ms)) sweep_heartbeats(now_ms);
}

// Answers the blocking requests due, then sets the next due time exactly.
void coordination_state::expire_requests(int64_t now_ms) {
  std::optional<int64_t> next;
  auto keep = [&](int64_t due) {
    if (!next || due < *next) next = due;
  };
  for (auto i = getters_.begin(); i != getters_.end();) {
    if (i->second.deadline_ms <= now_ms) {
      reply(i->second.conn, i->second.id, errc::timeout, "key " + i->first);
      i = getters_.erase(i);
    } else {
      keep(i->second.deadline_ms);
      ++i;
    }
  }
  for (auto b = barriers_.begin(); b != barriers_.end();) {
    auto& arrived = b->second.arrived;
    for (auto i = arrived.begin(); i != arrived.end();) {
      if (i->second.deadline_ms <= now_ms) {
        reply(i->second.conn, i->second.id, errc::timeout, "barrier " + b->first);
        i = arrived.erase(i);
      } else {
        keep(i->second.deadline_ms);
        ++i;
      }
    }
    b = arrived.empty() ? barriers_.erase(b) : std::next(b);
  }
  request_due_.reset(next);
}

// One sweep over every rank when the oldest heartbeat may be overdue, not a
// timer per rank; the next sweep is due when the oldest heartbeat left is.
// A heartbeat only moves its rank's due time later, so none is missed.
void coordination_state::sweep_heartbeats(int64_t now_ms) {
  for (size_t r = 0; r < workers_.size(); ++r) {
    auto& w = workers_[r];
    if (w.conn != 0 && now_ms - w.last_heartbeat_ms >= cfg_.heartbeat_timeout_ms)
      mark_lost(static_cast<int32_t>(r),
                "no heartbeat for " + std::to_string(now_ms - w.last_heartbeat_ms) + " ms");
  }
  heartbeat_due_.reset();
  for (auto& w : workers_)
    if (w.conn != 0) heartbeat_due_.lower_to(w.last_heartbeat_ms + cfg_.heartbeat_timeout_ms);
}

std::optional<int64_t> coordination_state::next_deadline_ms() const {
  std::optional<int64_t> result;
  auto consider = [&](int64_t t) {
    if (!result || t < *result) result = t;
  };
  if (auto due = request_due_.due_ms()) consider(*due);
  if (auto due = heartbeat_due_.due_ms()) consider(*due);
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
}

void coordination_state::start_generation(uint32_t generation) {
  log(log_level::info, component, "generation ", generation, " starts; dropping generation ",
      generation_);
  // The joining connection belongs to the new generation: keep it open.
  std::map<conn_id, connection> keep;
  for (auto& [conn, c] : conns_)
    if (c.rank < 0) keep.emplace(conn, c);
  for (auto& [conn, c] : keep) conns_.erase(conn);
  reset();
  conns_ = std::move(keep);
  generation_ = generation;
  progress_.reset();
  first_failure_rank_.reset();
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

// A blocking request is held until it completes; each costs memory for as
// long as its timeout, which the peer chooses. Counting them per connection
// when one arrives costs a pass over the pending ones, which a worker keeps
// few of.
bool coordination_state::admit_blocking(conn_id conn, uint64_t id, const std::string& what) {
  // A connection waits in each barrier once at most (one rank, one arrival):
  // while the gets and barriers are fewer than the limit, so are its
  // requests, and the pass is skipped (each of 1,024 arrivals at a barrier
  // paid a pass over all the others').
  if (getters_.size() + barriers_.size() < max_pending_requests_per_connection) return true;
  size_t pending = 0;
  for (auto& [key, w] : getters_) pending += w.conn == conn ? 1 : 0;
  for (auto& [name, b] : barriers_)
    for (auto& [r, w] : b.arrived) pending += w.conn == conn ? 1 : 0;
  if (pending < max_pending_requests_per_connection) return true;
  reply(conn, id, errc::invalid_argument,
        what + ": already " + std::to_string(pending) +
            " blocking requests pending on this connection (the limit)");
  return false;
}

void coordination_state::mark_lost(int32_t rank, const std::string& why) {
  auto& w = workers_[static_cast<size_t>(rank)];
  auto conn = w.conn;
  w.state = rank_state::lost;
  w.conn = 0;
  drop_requests_of(conn);
  close(conn);
  conns_.erase(conn);
  progress_.forget(rank);
  if (!first_failure_rank_) first_failure_rank_ = rank;
  log(log_level::warning, component, rank_text(rank), " lost: ", why);
  auto code = static_cast<int32_t>(errc::peer_lost);
  emit_event(rank, membership_event::lost, code, why);
  broadcast_failure(rank, code, why, true);
  fail_barriers_with(rank, errc::peer_lost, rank_text(rank) + " lost: " + why);
}

void coordination_state::emit_event(int32_t rank, int32_t kind, int32_t code, std::string message) {
  out_.events.push_back(membership_event{rank, kind, code, std::move(message), generation_});
}

void coordination_state::drop_requests_of(conn_id conn) {
  for (auto i = getters_.begin(); i != getters_.end();)
    i = i->second.conn == conn ? getters_.erase(i) : std::next(i);
  for (auto b = barriers_.begin(); b != barriers_.end();) {
    auto& arrived = b->second.arrived;
    for (auto i = arrived.begin(); i != arrived.end();)
      i = i->second.conn == conn ? arrived.erase(i) : std::next(i);
    b = arrived.empty() ? barriers_.erase(b) : std::next(b);
  }
}

void coordination_state::fail_barriers_with(int32_t rank, errc code, const std::string& why) {
  for (auto b = barriers_.begin(); b != barriers_.end();) {
    auto& ps = b->second.participants;
    if (!std::binary_search(ps.begin(), ps.end(), rank)) {
      ++b;
      continue;
    }
    for (auto& [r, w] : b->second.arrived)
      reply(w.conn, w.id, code, "barrier " + b->first + ": " + why);
    b = barriers_.erase(b);
  }
}

void coordination_state::broadcast_failure(int32_t rank, int32_t code, const std::string& message,
                                           bool lost) {
  wire::Envelope env;
  auto* f = env.mutable_failure();
  f->set_rank(rank);
  f->set_code(code);
  f->set_message(message);
  f->set_lost(lost);
  send_to_ranks(env, [](int32_t) { return true; });
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
    if (w.reported_phase) info.set_phase(lifeboat::to_string(*w.reported_phase));
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

phase coordination_state::cluster_phase() const {
  auto gone = [](const worker& w) {
    return w.state == rank_state::left || w.state == rank_state::lost ||
           w.state == rank_state::error;
  };
  if (std::any_of(workers_.begin(), workers_.end(), gone)) return phase::exiting;
  auto furthest = phase::training;
  auto notices = normalize_prefix(notice_key_prefix);
  auto first = kv_.lower_bound(notices);
  if (first != kv_.end() && first->first.compare(0, notices.size(), notices) == 0)
    furthest = phase::notice_received;
  for (auto& w : workers_)
    if (w.reported_phase) furthest = std::max(furthest, *w.reported_phase);
  return furthest;
}

std::map<std::string, std::string> coordination_state::snapshot(const std::string& prefix) const {
  auto p = normalize_prefix(prefix);
  std::map<std::string, std::string> result;
  for (auto i = kv_.lower_bound(p); i != kv_.end() && i->first.compare(0, p.size(), p) == 0; ++i)
    result.emplace(i->first, i->second);
  return result;
}

}  // namespace lifeboat
