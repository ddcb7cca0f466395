#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/coordination/connection_limits.hpp"
#include "actors/coordination/coordination_events.hpp"
#include "actors/coordination/deadline_floor.hpp"
#include "actors/coordination/heartbeat_schedule.hpp"
#include "actors/coordination/progress_tracker.hpp"
#include "messages/coordination.pb.h"
#include "messages/errors.hpp"
#include "messages/status.pb.h"

namespace lifeboat {

/// What the service must do after an input: frames to write (in order), then
/// connections to close, and membership events for local subscribers.
struct coordination_output {
  std::vector<std::pair<conn_id, wire::Envelope>> frames;
  /// Runs of `frames`, [first, first + count), that carry one envelope to
  /// many connections (a broadcast): the service encodes it once.
  struct run {
    size_t first;
    size_t count;
  };
  std::vector<run> broadcasts;
  std::vector<conn_id> closes;
  std::vector<membership_event> events;
};

/// How long the survivors' news of a closed connection waits for other
/// losses: a launcher killed outright takes its workers with it, and its node
/// is reported as one event. On an idle host they end within milliseconds of
/// each other; on a busy two-core one, one worker's connection once closed
/// more than 200 ms after its neighbour's, so the window is half a second.
constexpr int64_t closed_loss_window_ms = 500;

/// How long a rank that took part in the generation and joins it again
/// waits for the ranks still joined to leave before it is refused. Why
/// wait: a script's next handler joins as soon as the first one closed on
/// its rank, and the other ranks' leaves, sent after the same closing
/// barrier, may come a moment later; refused, a job that was fine failed.
/// Shorter than the join bound, which closes a connection not joined.
constexpr int64_t rejoin_hold_ms = 2000;

/// Collapses repeated '/' and strips a trailing '/': "a//b/" -> "a/b".
std::string normalize_key(const std::string& key);

/// Collapses repeated '/' but keeps a trailing one, so "a/" does not match "ab".
std::string normalize_prefix(const std::string& prefix);

/// The coordination service's logic without sockets, actors or clocks: every
/// input carries the current time (ms, any monotonic origin) and every effect
/// is queued in an output that the caller takes with take_output(), so tests
/// drive it directly.
///
/// A connection is first greeted with a nonce (on_connect) and may then only
/// send a JoinRequest; anything else, or a refused join, closes it. A join whose
/// incarnation is above the current generation starts a new generation (all
/// key-value, barrier and membership state is dropped and the old generation's
/// connections are closed); a join below it is refused as stale. A leave is
/// answered, then its connection is closed.
///
/// Bounds (connection_limits): a connection not joined within
/// config::join_bound_ms is closed; beyond config::max_unjoined connections
/// waiting to join, a new one is closed at accept (no Hello); a joined
/// connection with max_pending_requests_per_connection blocking requests
/// pending gets errc::invalid_argument for the next one.
///
/// Losses: a rank lost (its connection closed without a leave, its heartbeats
/// stopped for heartbeat_timeout_ms, its process ended before it joined) is
/// told to every survivor, and fails the barriers it had not reached, once
/// the losses that come with it are in (closed_loss_window_ms, or one
/// heartbeat interval after a silence). Ranks lost in one report are named
/// together in each failure's message: "... (lost together: rank 4, rank 5)".
class coordination_state {
 public:
  struct config {
    int32_t world_size = 1;
    std::string token;
    int64_t heartbeat_timeout_ms = 10000;
    int64_t join_bound_ms = unjoined_connection_bound_ms;
    size_t max_unjoined = max_unjoined_connections;
  };

  explicit coordination_state(config cfg);

  /// A connection was accepted; queues the Hello carrying `nonce`, or closes
  /// it when max_unjoined connections already wait to join.
  void on_connect(conn_id conn, std::string nonce, int64_t now_ms);

  /// A whole frame arrived on `conn`. A heartbeat that shows its rank hung
  /// (progress_tracker) fails that rank as if it had reported errc::hung
  /// "hang: no step completed for S s (peers at step N, its last step M)".
  void on_frame(conn_id conn, const wire::Envelope& env, int64_t now_ms);

  /// `conn` closed (by the peer, or because its bytes were not frames). A joined
  /// worker that had not left is lost.
  void on_disconnect(conn_id conn, int64_t now_ms);

  /// The process of `rank` in `generation` ended (its launcher reaped it;
  /// `how` says how). A rank that had not joined is lost at once: no
  /// connection of its will close to tell, and its peers, waiting for it in a
  /// barrier, fail now instead of at their timeouts. A rank that joined is
  /// left to its connection (a clean leave stays a leave). A report of an
  /// older generation changes nothing; one of a newer starts it, as its first
  /// join would.
  void on_process_exit(int32_t rank, uint32_t generation, const std::string& how, int64_t now_ms);

  /// The process hosting the service sends `req` to the ranks it names, as
  /// from service_sender: it speaks to the workers without being one.
  void on_service_send(const wire::PeerSend& req) { on_send(service_sender, req); }

  /// Closes connections not joined within the join bound, expires blocking
  /// gets, barrier waits and heartbeats due at `now_ms`.
  void on_tick(int64_t now_ms);

  /// The service itself did not run for `stalled_ms` up to `now_ms` (its
  /// process stopped, its host paused; stall_watch): that time is not
  /// counted against the joined workers' heartbeats, which were as stopped.
  void forgive_stall(int64_t stalled_ms, int64_t now_ms);

  /// The earliest time on_tick has something to do, if any.
  std::optional<int64_t> next_deadline_ms() const;

  /// Drops every key, barrier and worker, fails pending requests with
  /// errc::cancelled and closes every connection; the generation is kept.
  void reset();

  coordination_output take_output();

  /// One row per rank: step from the last heartbeat, ms since it, state
  /// (joining, alive, left, lost, error), step times and straggler. `phase`
  /// is left to the protocol that reads reported_status (the service's
  /// status_annotator).
  std::vector<wire::WorkerInfo> workers(int64_t now_ms) const;

  /// The last non-empty Heartbeat.status of `rank` in this generation, as
  /// sent (the service does not read it); empty when none came.
  const std::string& reported_status(int32_t rank) const;

  /// The events a subscriber that arrives now would have heard from the ranks
  /// still here: joined for a live rank, error (without its message, which
  /// is not kept) for one that reported an error and has not gone.
  std::vector<membership_event> present_workers() const;

  /// Every key starting with `prefix` (normalised) and its value.
  std::map<std::string, std::string> snapshot(const std::string& prefix) const;

  uint32_t generation() const { return generation_; }
  size_t connections() const { return conns_.size(); }
  const config& cfg() const { return cfg_; }

 private:
  enum class rank_state { joining, alive, left, lost, error };

  struct worker {
    rank_state state = rank_state::joining;
    conn_id conn = 0;  // 0: no live connection
    int64_t step = 0;
    int64_t last_heartbeat_ms = -1;
    std::string status;  // the last non-empty Heartbeat.status, unread
  };

  struct connection {
    std::string nonce;
    int32_t rank = -1;  // -1 until joined
    // The join of a rank that took part in the generation, held while other
    // ranks are still joined (hold_rejoin), and until when (0: never held).
    std::optional<wire::JoinRequest> held_join;
    int64_t held_until_ms = 0;
  };

  struct waiter {
    conn_id conn;
    uint64_t id;
    int64_t deadline_ms;
  };

  struct barrier {
    // The participants as the first arrival named them (empty: every rank).
    std::vector<int32_t> requested;
    // The same, sorted, each once.
    std::vector<int32_t> participants;
    std::map<int32_t, waiter> arrived;
    // When the first arrival came, and how long after it the wait is next
    // told in the log.
    int64_t opened_ms = 0;
    int64_t report_after_ms = barrier_wait_report_ms;
    // An arrival asked that those absent at its timeout be hung
    // (BarrierRequest.absent_hung).
    bool absent_hung = false;
  };
  // A barrier still open this long after its first arrival says in the log
  // whom it waits for, and again each time it has been open twice as long
  // (10, 20, 40 s, ...): a start that waits for a worker that never comes (a
  // rank still importing its framework, or one that never constructs its
  // handler) was two minutes of silence before its timeout named it, and a
  // wait told once at 10 s said nothing of who was still missing later.
  static constexpr int64_t barrier_wait_report_ms = 10000;

  static constexpr const char* component = "coordination_service";

  static const char* to_string(rank_state x);
  static std::string rank_text(int32_t rank);

  void on_join(conn_id conn, const wire::JoinRequest& req, int64_t now_ms);
  void on_request(conn_id conn, int32_t rank, const wire::Envelope& env, int64_t now_ms);
  void on_insert(conn_id conn, const wire::KvInsert& req);
  void on_get(conn_id conn, const wire::KvGet& req, int64_t now_ms);
  void on_try_get(conn_id conn, const wire::KvTryGet& req);
  void on_get_prefix(conn_id conn, const wire::KvGetPrefix& req);
  void on_erase_prefix(conn_id conn, const wire::KvErasePrefix& req);
  void on_barrier(conn_id conn, int32_t rank, const wire::BarrierRequest& req, int64_t now_ms);
  void on_error_report(int32_t rank, const wire::ErrorReport& req);
  void on_heartbeat(int32_t rank, const wire::Heartbeat& hb, int64_t now_ms);
  void declare_hung(const progress_tracker::hang& h);
  void declare_job_hung(const progress_tracker::job_hang& h);
  void on_send(int32_t rank, const wire::PeerSend& req);
  void on_leave(conn_id conn, int32_t rank, const wire::Leave& req);
  void on_cancel(conn_id conn, uint64_t id);
  void expire_gets(int64_t now_ms);
  void expire_barriers(int64_t now_ms);
  // Declares hung the first absent joined rank of each absent_hung barrier
  // with an arrival past its timeout.
  void declare_absent_hung(int64_t now_ms);
  std::string absent_text(const barrier& b, bool waiting) const;
  void expire_heartbeats(int64_t now_ms);
  void schedule_heartbeat_check();
  int64_t heartbeat_interval_ms() const;

  void refuse(conn_id conn, errc code, const std::string& why);
  void drop_unjoined(conn_id conn, const std::string& why);
  bool admit_blocking(conn_id conn, uint64_t id, const std::string& what);
  void start_generation(uint32_t generation);
  // Drops the generation's state (keys, barriers, ranks, progress) and keeps
  // the connections not joined yet: for start_generation, and for a new
  // session of the same generation (on_join).
  void start_session();
  // "rank 1, rank 2": the ranks joined now.
  std::string joined_ranks() const;
  // Holds `conn`'s join of a rank that took part (see rejoin_hold_ms).
  void hold_rejoin(conn_id conn, const wire::JoinRequest& req, int64_t now_ms);
  // Joins the held joins once no rank is joined, and refuses those held
  // past their time.
  void settle_held_joins(int64_t now_ms);
  // `silent`: lost for its silence (membership_event::silent).
  void mark_lost(int32_t rank, const std::string& why, int64_t report_due_ms, bool silent);
  void report_losses();
  membership_event& emit_event(int32_t rank, int32_t kind, int32_t code = 0,
                               std::string message = {});
  void drop_requests_of(conn_id conn);
  // Fails every barrier `rank` takes part in; with `unless_loss_pending`, not
  // those with a participant whose loss report_losses will tell.
  void fail_barriers_with(int32_t rank, errc code, const std::string& why,
                          bool unless_loss_pending = false);
  bool loss_pending(const std::vector<int32_t>& participants) const;
  void broadcast_failure(int32_t rank, int32_t code, const std::string& message, bool lost);
  // The frame that tells of `rank`'s failure (or loss).
  static wire::Envelope failure_frame(int32_t rank, int32_t code, const std::string& message,
                                      bool lost);
  void send_frame(conn_id conn, wire::Envelope env);
  // Queues `env` to every joined rank that `to` accepts, as one broadcast run.
  template <class Pred>
  void send_to_ranks(const wire::Envelope& env, Pred to);
  void reply(conn_id conn, uint64_t id, errc code = errc::ok, const std::string& why = {});
  void close(conn_id conn);

  config cfg_;
  uint32_t generation_ = 0;
  std::map<conn_id, connection> conns_;
  connection_limits limits_;
  std::vector<worker> workers_;
  std::map<std::string, std::string> kv_;
  std::multimap<std::string, waiter> getters_;
  std::map<std::string, barrier> barriers_;
  progress_tracker progress_;
  // Of this generation: the one broadcast; job_failure when it is no one
  // rank's (every rank hung in its step).
  std::optional<int32_t> first_failure_rank_;
  int64_t next_straggler_check_ms_ = 0;
  // When to look for overdue heartbeats and expired requests: the service
  // asks for the next deadline after every frame, and a scan of every rank
  // then made each heartbeat cost O(world size).
  deadline_floor heartbeat_due_;
  deadline_floor request_due_;
  // Losses not yet told to the survivors, and when to tell them (see
  // mark_lost): ranks lost together are named together.
  struct pending_loss {
    int32_t rank;
    std::string why;
  };
  std::vector<pending_loss> pending_losses_;
  deadline_floor losses_due_;
  deadline_floor rejoin_due_;
  coordination_output out_;
};

}  // namespace lifeboat
