#pragma once

// The coordination agent's internals, shared by its files and by nothing
// else: its state, and the steps its behaviour (coordination_agent.cpp) is
// made of, for the requests (coordination_agent_requests.cpp) and for the
// connection and join (coordination_agent_link.cpp). Every function runs on
// the agent's own thread (a broker's), on the state of the `self` it is given.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <caf/io/broker.hpp>

#include "actors/coordination/coordination_agent.hpp"
#include "actors/coordination/coordination_frame.hpp"
#include "actors/coordination/frame_stream.hpp"
#include "actors/coordination/stall_watch.hpp"

namespace lifeboat::agent_detail {

inline constexpr const char* component = "coordination_agent";
inline constexpr std::chrono::milliseconds first_backoff{20};
inline constexpr std::chrono::milliseconds max_backoff{1000};
// While the service cannot be reached before the join, a line this often
// says what the worker waits for: the join timeout is minutes, and a
// silent wait left a user to guess (a wrong LIFEBOAT_COORDINATOR, a rank 0
// still importing its framework).
inline constexpr std::chrono::seconds unreachable_report_interval{10};
inline constexpr const char* service_lost_message = "coordination service lost";
// The same loss where a rank's process hosts the service: "rank N lost: ...".
inline constexpr const char* host_lost_message = "its coordination service is gone";
using join_deadline_atom = caf::atom_constant<caf::atom("joindead")>;
using handshake_deadline_atom = caf::atom_constant<caf::atom("handdead")>;
using step_sample_atom = caf::atom_constant<caf::atom("stepsample")>;

// The completed step is read this often, so that a heartbeat can say how long
// ago it last moved: the service times a hang from there, not from the
// heartbeat that first carried the step (up to a heartbeat interval later).
inline constexpr std::chrono::milliseconds step_sample_interval{50};

// What to do with the service's Reply to one request.
struct pending_request {
  enum kind_t { unit, try_get, get_prefix, get, leave } kind;
  caf::response_promise promise;  // all kinds but `get`
  uint64_t get_handle = 0;        // `get` only
};

// A blocking get: its result waits here until (get_wait_atom) collects it.
struct get_slot {
  uint64_t request_id = 0;
  std::optional<caf::expected<std::string>> result;
  std::vector<caf::response_promise> waiters;
};

struct agent_actor_state {
  agent_config cfg;
  caf::io::connection_handle hdl;
  bool connected = false;
  uint64_t connection_serial = 0;  // which connection a handshake deadline is for
  bool greeted = false;            // the service's hello came on this connection
  bool service_seen = false;       // some connection was greeted
  bool joined = false;
  int64_t last_step = 0;  // the step source's value when last sampled
  std::chrono::steady_clock::time_point last_step_seen;  // when it last changed
  bool stall_told = false;  // a heartbeat said the step is past the hang timeout
  std::chrono::steady_clock::time_point last_heard;  // when the service last sent a frame
  // cfg.heartbeat_interval, or the service's own when its JoinReply asks for
  // heartbeats more often (its heartbeat timeout is shorter).
  std::chrono::milliseconds heartbeat_interval{0};
  bool left = false;
  caf::error join_error;             // set once joining failed for good
  std::string challenge;             // this connection's nonce for the service to answer
  frame_stream stream;               // this connection's frames
  std::shared_ptr<tls_context> tls;  // null: clear text
  std::chrono::milliseconds backoff = first_backoff;
  std::chrono::steady_clock::time_point join_deadline;
  // When the join began, and when the last line said the service was unreachable.
  std::chrono::steady_clock::time_point join_started;
  std::chrono::steady_clock::time_point unreachable_told;
  std::vector<caf::response_promise> join_waiters;
  uint64_t next_id = 1;
  std::map<uint64_t, pending_request> pending;
  std::map<uint64_t, get_slot> gets;
  std::vector<caf::actor> subscribers;
  // Events that came before anyone subscribed (a worker joins before its
  // actors exist); the first subscriber gets them.
  std::vector<caf::message> unclaimed;
  stall_watch stall;  // of this process, seen by the periodic ticks
  static inline const char* name = "coordination_agent";
  // The state goes in on_exit(), before CAF tells the actor's monitors.
  ~agent_actor_state() {
    if (cfg.ended) cfg.ended->store(true);
  }
};

using agent_broker = caf::io::stateful_broker<agent_actor_state>;

caf::error reply_error(const wire::Reply& r);

// Reads the step source; a new value restarts the step's age. Returns the
// age in milliseconds.
int64_t sample_step(agent_actor_state& st);

// Run first by each periodic tick: a stall of this process's own
// (stall_watch) is not counted as the service's silence, nor as the
// trainer's step standing still.
void forgive_own_stall(agent_actor_state& st);

// Sends `env` as one frame. One over max_frame_bytes is not sent, and why
// comes back: the service closes the connection of a peer that sends a
// larger frame, and this worker would be lost for an oversized message.
std::optional<std::string> send_envelope(agent_broker* self, const wire::Envelope& env);

void send_heartbeat(agent_broker* self);

void notify(agent_broker* self, const caf::message& msg);

void finish_join(agent_broker* self, caf::error err);

void complete_get(agent_broker* self, uint64_t handle, caf::expected<std::string> result);

void complete(agent_broker* self, pending_request& p, const wire::Reply& r);

// Every request in flight fails at once: nothing may wait on a service that is gone.
void fail_pending(agent_broker* self, const caf::error& err);

// Sends a request and records what to do with its reply; without a joined
// connection it fails at once (errc::unavailable), and so does one that does
// not fit in a frame (errc::invalid_argument).
uint64_t start_request(agent_broker* self, wire::Envelope env, pending_request p);

void try_connect(agent_broker* self);

// Takes what the connection delivered; a TLS failure ends the connection (and,
// before the join, the join: refuse_stranger).
void on_bytes(agent_broker* self, const caf::io::new_data_msg& msg);

// A peer at the service's address that does not speak the protocol: a
// retry would find the same stranger there, so the join fails at once.
void refuse_stranger(agent_broker* self, const std::string& why);

bool proves_token(const agent_actor_state& st, const wire::JoinReply& reply);

// Whatever answers at the service's address but cannot answer the worker's
// challenge must not be followed: it could hand out keys, barriers and a
// fake agreed step. Retrying would meet it again, so the join fails now.
void refuse_impostor(agent_broker* self);

void on_envelope(agent_broker* self, const wire::Envelope& env);

void on_connection_lost(agent_broker* self, const std::string& why);

}  // namespace lifeboat::agent_detail
