// coordination_state's barriers, and the bookkeeping every blocking request
// (a get or a barrier arrival) shares: the per-connection bound, cancel,
// expiry, and dropping those of a connection that went away.
#include "actors/coordination/coordination_state.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "messages/log.hpp"

namespace lifeboat {

namespace {

// Whether an arrival names the participants exactly as `first` (the
// barrier's first arrival) did, in the same order.
bool named_alike(const std::vector<int32_t>& first,
                 const google::protobuf::RepeatedField<int32_t>& requested) {
  return std::equal(first.begin(), first.end(), requested.begin(), requested.end());
}

}  // namespace

void coordination_state::on_barrier(conn_id conn, int32_t rank, const wire::BarrierRequest& req,
                                    int64_t now_ms) {
  // The participants, sorted and each once. Every arrival of a barrier
  // usually names them alike: sorting the whole world's ranks again for each
  // (an empty list means every rank) cost the service's one thread about
  // 10 us an arrival, 10 ms for a barrier of 1,024 (scale_bench). An arrival
  // that names them as the first arrival did reuses its list, checked then.
  auto open = barriers_.find(req.name());
  bool known = open != barriers_.end() && !open->second.arrived.empty() &&
               named_alike(open->second.requested, req.participants());
  std::vector<int32_t> named;
  if (!known) {
    named.assign(req.participants().begin(), req.participants().end());
    if (named.empty())
      for (int32_t r = 0; r < cfg_.world_size; ++r) named.push_back(r);
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    if (named.front() < 0 || named.back() >= cfg_.world_size) {
      reply(conn, req.id(), errc::invalid_argument,
            "barrier " + req.name() + ": participant out of range");
      return;
    }
  }
  const auto& participants = known ? open->second.participants : named;
  if (!std::binary_search(participants.begin(), participants.end(), rank)) {
    reply(conn, req.id(), errc::invalid_argument,
          "barrier " + req.name() + ": " + rank_text(rank) + " is not a participant");
    return;
  }
  // A participant that can no longer arrive fails the barrier at once rather
  // than at its timeout. One that failed or was lost is named before one that
  // left: workers leave when they give up after a peer's failure, so the
  // failure is where it began. While a participant's loss waits to be told
  // (report_losses), the arrival waits with the others: the report fails the
  // barrier naming every rank lost with it.
  auto state_of = [&](int32_t p) { return workers_[static_cast<size_t>(p)].state; };
  auto gone = std::find_if(participants.begin(), participants.end(), [&](int32_t p) {
    return state_of(p) == rank_state::lost || state_of(p) == rank_state::error;
  });
  if (gone == participants.end())
    gone = std::find_if(participants.begin(), participants.end(),
                        [&](int32_t p) { return state_of(p) == rank_state::left; });
  if (gone != participants.end() && !loss_pending(participants)) {
    auto state = state_of(*gone);
    auto code = state == rank_state::error ? errc::peer_error : errc::peer_lost;
    reply(conn, req.id(), code,
          "barrier " + req.name() + ": " + rank_text(*gone) + " is " + to_string(state));
    return;
  }
  if (!admit_blocking(conn, req.id(), "barrier " + req.name())) return;
  auto& b = barriers_[req.name()];
  if (b.arrived.empty()) {
    b.requested.assign(req.participants().begin(), req.participants().end());
    b.participants = std::move(named);
    b.opened_ms = now_ms;
    b.report_after_ms = barrier_wait_report_ms;
    request_due_.lower_to(now_ms + barrier_wait_report_ms);
  } else if (!known && b.participants != named) {
    reply(conn, req.id(), errc::invalid_argument,
          "barrier " + req.name() + ": participants differ from the other arrivals'");
    return;
  }
  b.absent_hung = b.absent_hung || req.absent_hung();
  auto due = due_after(now_ms, std::max<int64_t>(req.timeout_ms(), 0));
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

bool coordination_state::loss_pending(const std::vector<int32_t>& participants) const {
  return std::any_of(pending_losses_.begin(), pending_losses_.end(), [&](const pending_loss& l) {
    return std::binary_search(participants.begin(), participants.end(), l.rank);
  });
}

void coordination_state::fail_barriers_with(int32_t rank, errc code, const std::string& why,
                                            bool unless_loss_pending) {
  for (auto b = barriers_.begin(); b != barriers_.end();) {
    auto& ps = b->second.participants;
    if (!std::binary_search(ps.begin(), ps.end(), rank) ||
        (unless_loss_pending && loss_pending(ps))) {
      ++b;
      continue;
    }
    for (auto& [r, w] : b->second.arrived)
      reply(w.conn, w.id, code, "barrier " + b->first + ": " + why);
    b = barriers_.erase(b);
  }
}

namespace {

// "rank 3", "ranks 1, 3, 4", "ranks 1, 3, 4, ... (12 in all)".
std::string ranks_text(const std::vector<int32_t>& ranks) {
  constexpr size_t named = 8;
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size() && i < named; ++i)
    out += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  if (ranks.size() > named) out += ", ... (" + std::to_string(ranks.size()) + " in all)";
  return out;
}

}  // namespace

// Whom a barrier that timed out (or, `waiting`, is still open) waits for,
// and which of them never joined: a worker that has not constructed its
// handler yet (or cannot reach the service) holds every other at its first
// barrier, and "timeout" alone named no one.
std::string coordination_state::absent_text(const barrier& b, bool waiting) const {
  std::vector<int32_t> absent, unjoined;
  for (auto p : b.participants) {
    if (b.arrived.count(p) > 0) continue;
    absent.push_back(p);
    if (workers_[static_cast<size_t>(p)].state == rank_state::joining) unjoined.push_back(p);
  }
  if (absent.empty()) return {};
  auto text = waiting ? ", waiting for " + ranks_text(absent)
                      : ": " + ranks_text(absent) + " did not arrive";
  if (unjoined.empty()) return text;
  return text + " (" + ranks_text(unjoined) +
         (unjoined.size() == 1 ? " never joined: its worker has"
                               : " never joined: their workers have") +
         " not constructed a handler, or cannot reach the coordination service)";
}

void coordination_state::declare_absent_hung(int64_t now_ms) {
  // Collected first: a failure fails (and erases) every barrier of its rank.
  std::vector<std::pair<int32_t, std::string>> hung;
  for (auto& [name, b] : barriers_) {
    if (!b.absent_hung || std::none_of(b.arrived.begin(), b.arrived.end(), [&](const auto& a) {
          return a.second.deadline_ms <= now_ms;
        }))
      continue;
    std::vector<int32_t> waited;
    for (auto& [r, w] : b.arrived) waited.push_back(r);
    for (auto p : b.participants) {
      if (b.arrived.count(p) > 0 || workers_[static_cast<size_t>(p)].state != rank_state::alive)
        continue;
      hung.emplace_back(p, "hang: did not arrive at barrier " + name + " in " +
                               std::to_string((now_ms - b.opened_ms) / 1000) + " s, where " +
                               ranks_text(waited) + " waited");
      break;
    }
  }
  for (auto& [rank, message] : hung) {
    wire::ErrorReport report;
    report.set_code(static_cast<int32_t>(errc::hung));
    report.set_message(message);
    progress_.forget(rank);
    on_error_report(rank, report);
  }
}

void coordination_state::expire_barriers(int64_t now_ms) {
  declare_absent_hung(now_ms);
  for (auto b = barriers_.begin(); b != barriers_.end();) {
    auto& arrived = b->second.arrived;
    // Taken before the first expired arrival leaves: those that time out
    // together arrived, and none of them is named as absent.
    std::optional<std::string> absent;
    for (auto i = arrived.begin(); i != arrived.end();) {
      if (i->second.deadline_ms <= now_ms) {
        if (!absent) absent = absent_text(b->second, false);
        reply(i->second.conn, i->second.id, errc::timeout, "barrier " + b->first + *absent);
        i = arrived.erase(i);
      } else {
        request_due_.lower_to(i->second.deadline_ms);
        ++i;
      }
    }
    if (!arrived.empty()) {
      auto& open = b->second;
      if (now_ms - open.opened_ms >= open.report_after_ms) {
        log(log_level::info, component, "barrier ", b->first, " open for ",
            (now_ms - open.opened_ms) / 1000, " s", absent_text(open, true));
        while (open.report_after_ms <= now_ms - open.opened_ms) open.report_after_ms *= 2;
      }
      request_due_.lower_to(open.opened_ms + open.report_after_ms);
    }
    b = arrived.empty() ? barriers_.erase(b) : std::next(b);
  }
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

}  // namespace lifeboat
