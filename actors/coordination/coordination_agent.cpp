#include "actors/coordination/coordination_agent.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include <caf/io/broker.hpp>
#include <caf/io/middleman.hpp>

#include "actors/coordination/broker_subscribers.hpp"
#include "actors/coordination/coordination_auth.hpp"
#include "actors/coordination/coordination_frame.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"

namespace lifeboat {

namespace {

constexpr const char* component = "coordination_agent";
constexpr std::chrono::milliseconds first_backoff{20};
constexpr std::chrono::milliseconds max_backoff{1000};
constexpr const char* service_lost_message = "coordination service lost";

using join_deadline_atom = caf::atom_constant<caf::atom("joindead")>;
using handshake_deadline_atom = caf::atom_constant<caf::atom("handdead")>;
using step_sample_atom = caf::atom_constant<caf::atom("stepsample")>;

// The completed step is read this often, so that a heartbeat can say how long
// ago it last moved: the service times a hang from there, not from the
// heartbeat that first carried the step (up to a heartbeat interval later).
constexpr std::chrono::milliseconds step_sample_interval{50};

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
  bool left = false;
  caf::error join_error;  // set once joining failed for good
  std::string challenge;  // this connection's nonce for the service to answer
  frame_splitter reader;
  std::chrono::milliseconds backoff = first_backoff;
  std::chrono::steady_clock::time_point join_deadline;
  std::vector<caf::response_promise> join_waiters;
  uint64_t next_id = 1;
  std::map<uint64_t, pending_request> pending;
  std::map<uint64_t, get_slot> gets;
  std::vector<caf::actor> subscribers;
  // Events that came before anyone subscribed (a worker joins before its
  // actors exist); the first subscriber gets them.
  std::vector<caf::message> unclaimed;
  static inline const char* name = "coordination_agent";
  // The state goes in on_exit(), before CAF tells the actor's monitors.
  ~agent_actor_state() {
    if (cfg.ended) cfg.ended->store(true);
  }
};

using agent_broker = caf::io::stateful_broker<agent_actor_state>;

caf::error reply_error(const wire::Reply& r) {
  if (r.error_code() == 0) return caf::none;
  return make_error(static_cast<errc>(r.error_code()), r.error_message());
}

// Reads the step source; a new value restarts the step's age. Returns the
// age in milliseconds.
int64_t sample_step(agent_actor_state& st) {
  auto now = std::chrono::steady_clock::now();
  auto step = st.cfg.step_source ? st.cfg.step_source() : 0;
  if (step != st.last_step || st.last_step_seen == std::chrono::steady_clock::time_point{}) {
    st.last_step = step;
    st.last_step_seen = now;
    st.stall_told = false;
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - st.last_step_seen).count();
}

void send_envelope(agent_broker* self, const wire::Envelope& env) {
  write_frame(self, self->state.hdl, env);
}

void send_heartbeat(agent_broker* self) {
  auto& st = self->state;
  wire::Envelope env;
  auto* hb = env.mutable_heartbeat();
  hb->set_step_age_ms(sample_step(st));
  hb->set_step(st.last_step);
  if (st.cfg.phase_source) hb->set_phase(st.cfg.phase_source());
  if (st.cfg.blocked_source) hb->set_blocked_ms(st.cfg.blocked_source());
  send_envelope(self, env);
}

void notify(agent_broker* self, const caf::message& msg) {
  if (self->state.subscribers.empty()) self->state.unclaimed.push_back(msg);
  for (auto& sub : self->state.subscribers) self->send(sub, msg);
}

void finish_join(agent_broker* self, caf::error err) {
  auto& st = self->state;
  if (err) st.join_error = err;
  for (auto& rp : st.join_waiters) {
    if (err)
      rp.deliver(err);
    else
      rp.deliver(caf::unit);
  }
  st.join_waiters.clear();
}

void complete_get(agent_broker* self, uint64_t handle, caf::expected<std::string> result) {
  auto i = self->state.gets.find(handle);
  if (i == self->state.gets.end()) return;
  if (i->second.waiters.empty()) {
    i->second.result = std::move(result);
    return;
  }
  for (auto& rp : i->second.waiters) {
    if (result)
      rp.deliver(*result);
    else
      rp.deliver(result.error());
  }
  self->state.gets.erase(i);
}

void complete(agent_broker* self, pending_request& p, const wire::Reply& r) {
  auto err = reply_error(r);
  if (p.kind == pending_request::get) {
    if (err)
      complete_get(self, p.get_handle, err);
    else
      complete_get(self, p.get_handle, r.value());
    return;
  }
  if (err) {
    p.promise.deliver(err);
    return;
  }
  switch (p.kind) {
    case pending_request::try_get:
      p.promise.deliver(r.found(), r.value());
      return;
    case pending_request::get_prefix: {
      std::map<std::string, std::string> entries;
      for (auto& kv : r.entries()) entries.emplace(kv.key(), kv.value());
      p.promise.deliver(std::move(entries));
      return;
    }
    case pending_request::leave:
      self->state.left = true;
      self->state.joined = false;
      self->state.connected = false;
      self->close(self->state.hdl);
      p.promise.deliver(caf::unit);
      return;
    default:
      p.promise.deliver(caf::unit);
      return;
  }
}

// Every request in flight fails at once: nothing may wait on a service that is gone.
void fail_pending(agent_broker* self, const caf::error& err) {
  auto pending = std::move(self->state.pending);
  self->state.pending.clear();
  for (auto& [id, p] : pending) {
    if (p.kind == pending_request::get)
      complete_get(self, p.get_handle, err);
    else
      p.promise.deliver(err);
  }
}

// Sends a request and records what to do with its reply; without a joined
// connection it fails at once.
uint64_t start_request(agent_broker* self, wire::Envelope env, pending_request p) {
  auto& st = self->state;
  auto id = st.next_id++;
  switch (env.body_case()) {
    case wire::Envelope::kInsert:
      env.mutable_insert()->set_id(id);
      break;
    case wire::Envelope::kGet:
      env.mutable_get()->set_id(id);
      break;
    case wire::Envelope::kTryGet:
      env.mutable_try_get()->set_id(id);
      break;
    case wire::Envelope::kGetPrefix:
      env.mutable_get_prefix()->set_id(id);
      break;
    case wire::Envelope::kErasePrefix:
      env.mutable_erase_prefix()->set_id(id);
      break;
    case wire::Envelope::kBarrier:
      env.mutable_barrier()->set_id(id);
      break;
    case wire::Envelope::kLeave:
      env.mutable_leave()->set_id(id);
      break;
    default:
      break;
  }
  if (!st.joined) {
    auto err = make_error(errc::unavailable, st.left ? "coordination agent has left"
                                                     : "coordination agent is not joined");
    if (p.kind == pending_request::get)
      complete_get(self, p.get_handle, err);
    else
      p.promise.deliver(err);
    return id;
  }
  st.pending.emplace(id, std::move(p));
  send_envelope(self, env);
  return id;
}

void try_connect(agent_broker* self) {
  auto& st = self->state;
  if (st.joined || st.join_error || st.left) return;
  auto hdl = self->add_tcp_scribe(st.cfg.host, st.cfg.port);
  if (hdl) {
    st.hdl = *hdl;
    st.connected = true;
    st.greeted = false;
    st.challenge.clear();
    st.reader = frame_splitter{};
    self->configure_read(st.hdl, caf::io::receive_policy::at_most(frame_read_bytes));
    self->delayed_send(self, st.cfg.handshake_timeout, handshake_deadline_atom::value,
                       ++st.connection_serial);
    return;
  }
  if (std::chrono::steady_clock::now() + st.backoff >= st.join_deadline) {
    auto where = st.cfg.host + ":" + std::to_string(st.cfg.port);
    auto why = self->system().render(hdl.error());
    // A service that greeted and went away is lost (its host died during
    // the start), not one that never came.
    finish_join(self,
                st.service_seen
                    ? make_error(errc::peer_lost, "lost the coordination service at " + where +
                                                      " before joining: " + why)
                    : make_error(errc::unavailable,
                                 "cannot reach the coordination service at " + where + " within " +
                                     std::to_string(st.cfg.join_timeout.count()) + " ms: " + why));
    return;
  }
  self->delayed_send(self, st.backoff, connect_atom::value);
  st.backoff = std::min(st.backoff * 2, max_backoff);
}

// A peer at the service's address that does not speak the protocol: a
// retry would find the same stranger there, so the join fails at once.
void refuse_stranger(agent_broker* self, const std::string& why) {
  auto& st = self->state;
  auto what = "the peer at " + st.cfg.host + ":" + std::to_string(st.cfg.port) +
              " is not a lifeboat coordination service: " + why;
  log(log_level::error, component, what);
  finish_join(self, make_error(errc::refused, what));
}

bool proves_token(const agent_actor_state& st, const wire::JoinReply& reply) {
  auto expected =
      service_proof(st.cfg.token, st.challenge, st.cfg.rank, st.cfg.world_size, reply.generation());
  return !st.challenge.empty() && mac_equal(expected, reply.proof());
}

// Whatever answers at the service's address but cannot answer the worker's
// challenge must not be followed: it could hand out keys, barriers and a
// fake agreed step. Retrying would meet it again, so the join fails now.
void refuse_impostor(agent_broker* self) {
  auto& st = self->state;
  auto what = "the coordination service at " + st.cfg.host + ":" + std::to_string(st.cfg.port) +
              " could not prove it knows the cluster token";
  log(log_level::error, component, what);
  st.connected = false;
  self->close(st.hdl);
  finish_join(self, make_error(errc::refused, what));
}

void on_envelope(agent_broker* self, const wire::Envelope& env) {
  auto& st = self->state;
  switch (env.body_case()) {
    case wire::Envelope::kHello: {
      st.greeted = true;
      st.service_seen = true;
      wire::Envelope out;
      auto* j = out.mutable_join();
      j->set_protocol_version(coordination_protocol_version);
      j->set_rank(st.cfg.rank);
      j->set_world_size(st.cfg.world_size);
      j->set_incarnation(st.cfg.incarnation);
      j->set_hang_timeout_ms(st.cfg.hang_timeout_ms);
      j->set_mac(join_mac(st.cfg.token, env.hello().nonce(), st.cfg.rank, st.cfg.world_size,
                          st.cfg.incarnation));
      st.challenge = make_join_nonce();
      j->set_nonce(st.challenge);
      send_envelope(self, out);
      return;
    }
    case wire::Envelope::kJoinReply:
      if (!env.join_reply().ok()) {
        log(log_level::error, component, "join refused: ", env.join_reply().message());
        st.connected = false;
        self->close(st.hdl);
        finish_join(self, make_error(errc::refused, "coordination service refused rank " +
                                                        std::to_string(st.cfg.rank) + ": " +
                                                        env.join_reply().message()));
        return;
      }
      if (!proves_token(st, env.join_reply())) {
        refuse_impostor(self);
        return;
      }
      st.joined = true;
      st.last_heard = std::chrono::steady_clock::now();
      log(log_level::debug, component, "joined generation ", env.join_reply().generation());
      finish_join(self, caf::none);
      self->send(self, tick_atom::value);
      if (st.cfg.step_source) self->send(self, step_sample_atom::value);
      return;
    case wire::Envelope::kReply: {
      auto i = st.pending.find(env.reply().id());
      if (i == st.pending.end()) return;
      auto p = std::move(i->second);
      st.pending.erase(i);
      complete(self, p, env.reply());
      return;
    }
    case wire::Envelope::kDelivery: {
      auto& d = env.delivery();
      notify(self, caf::make_message(peer_message{d.from_rank(), d.channel(), d.payload()}));
      return;
    }
    case wire::Envelope::kHeartbeat:
      // The service's answer to a heartbeat: its arrival is all it says.
      return;
    case wire::Envelope::kFailure: {
      auto& f = env.failure();
      notify(self, caf::make_message(peer_failure{f.rank(), f.code(), f.message(), f.lost()}));
      return;
    }
    default:
      log(log_level::warning, component, "ignoring unexpected message ",
          static_cast<int>(env.body_case()));
      return;
  }
}

void on_connection_lost(agent_broker* self, const std::string& why) {
  auto& st = self->state;
  st.connected = false;
  if (st.left || st.join_error) return;
  if (!st.joined) {
    // The service may not be fully up yet, or closed a connection of an old
    // generation: keep trying until the join deadline. A service that had
    // greeted and is now unreachable is gone: the rest of the cluster learns
    // of it within the heartbeat bound, and so does this worker.
    if (st.service_seen)
      st.join_deadline =
          std::min(st.join_deadline, std::chrono::steady_clock::now() + st.cfg.rejoin_bound);
    log(log_level::debug, component, "connection closed before the join: ", why);
    self->delayed_send(self, st.backoff, connect_atom::value);
    st.backoff = std::min(st.backoff * 2, max_backoff);
    return;
  }
  st.joined = false;
  log(log_level::error, component, service_lost_message, ": ", why);
  fail_pending(self, make_error(errc::unavailable, service_lost_message));
  notify(self, caf::make_message(peer_failure{-1, static_cast<int32_t>(errc::unavailable),
                                              service_lost_message, true}));
}

caf::behavior agent_actor(agent_broker* self, agent_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.join_deadline = std::chrono::steady_clock::now() + st.cfg.join_timeout;
  close_on_exit_forget_on_down(self, self->state.subscribers);
  self->send(self, connect_atom::value);
  self->delayed_send(self, st.cfg.join_timeout, join_deadline_atom::value);
  return {
      [self](connect_atom) { try_connect(self); },
      [self](join_deadline_atom) {
        auto& st = self->state;
        if (st.joined || st.left || st.join_error) return;
        if (st.connected) self->close(st.hdl);
        st.connected = false;
        finish_join(self, make_error(errc::timeout,
                                     "not joined to the coordination service at " + st.cfg.host +
                                         ":" + std::to_string(st.cfg.port) + " within " +
                                         std::to_string(st.cfg.join_timeout.count()) + " ms"));
      },
      [self](handshake_deadline_atom, uint64_t serial) {
        auto& st = self->state;
        if (!st.connected || st.greeted || serial != st.connection_serial) return;
        self->close(st.hdl);
        st.connected = false;
        refuse_stranger(self, "it did not greet within " +
                                  std::to_string(st.cfg.handshake_timeout.count()) + " ms");
      },
      [self](const caf::io::new_data_msg& msg) {
        auto& st = self->state;
        if (!st.connected || msg.handle != st.hdl) return;
        st.last_heard = std::chrono::steady_clock::now();
        st.reader.append(msg.buf.data(), msg.buf.size());
        // One read may hold several frames; one may end the connection.
        for (wire::Envelope env; st.connected && msg.handle == st.hdl; env.Clear()) {
          switch (st.reader.next(env)) {
            case frame_splitter::status::need_more:
              return;
            case frame_splitter::status::oversized:
            case frame_splitter::status::malformed:
              self->close(st.hdl);
              if (!st.joined) {
                st.connected = false;
                refuse_stranger(self, "it sent what is no frame of the protocol");
                return;
              }
              on_connection_lost(self, "bad frame from the service");
              return;
            case frame_splitter::status::frame:
              on_envelope(self, env);
              break;
          }
        }
      },
      [self](const caf::io::connection_closed_msg& msg) {
        if (msg.handle == self->state.hdl && self->state.connected)
          on_connection_lost(self, "connection closed");
      },
      [self](step_sample_atom) {
        auto& st = self->state;
        if (!st.joined) return;
        // A step that has not moved for the hang timeout is told at once,
        // not at the next heartbeat: the service's verdict waits for it.
        if (sample_step(st) >= st.cfg.hang_timeout_ms && st.cfg.hang_timeout_ms > 0 &&
            !st.stall_told) {
          st.stall_told = true;
          send_heartbeat(self);
        }
        self->delayed_send(self, step_sample_interval, step_sample_atom::value);
      },
      [self](tick_atom) {
        auto& st = self->state;
        if (!st.joined) return;
        // Cut off from the service, this worker must stop (and commit
        // nothing) as its peers do when the service declares it lost.
        auto silent = std::chrono::steady_clock::now() - st.last_heard;
        if (silent >= st.cfg.service_silence_bound) {
          self->close(st.hdl);
          on_connection_lost(
              self, "nothing heard from it for " +
                        std::to_string(
                            std::chrono::duration_cast<std::chrono::milliseconds>(silent).count()) +
                        " ms");
          return;
        }
        send_heartbeat(self);
        self->delayed_send(self, st.cfg.heartbeat_interval, tick_atom::value);
      },
      [self](join_wait_atom) -> caf::result<void> {
        auto& st = self->state;
        if (st.joined || st.left) return caf::unit;
        if (st.join_error) return st.join_error;
        auto rp = self->make_response_promise();
        st.join_waiters.push_back(rp);
        return caf::delegated<void>{};
      },
      [self](insert_atom, const std::string& key, const std::string& value) -> caf::result<void> {
        wire::Envelope env;
        env.mutable_insert()->set_key(key);
        env.mutable_insert()->set_value(value);
        auto rp = self->make_response_promise();
        start_request(self, std::move(env), pending_request{pending_request::unit, rp});
        return caf::delegated<void>{};
      },
      [self](get_start_atom, const std::string& key, int64_t timeout_ms) -> uint64_t {
        auto& st = self->state;
        auto handle = st.next_id++;
        st.gets.emplace(handle, get_slot{});
        wire::Envelope env;
        env.mutable_get()->set_key(key);
        env.mutable_get()->set_timeout_ms(timeout_ms);
        pending_request p{pending_request::get, {}, handle};
        auto id = start_request(self, std::move(env), std::move(p));
        if (auto i = st.gets.find(handle); i != st.gets.end()) i->second.request_id = id;
        return handle;
      },
      [self](get_wait_atom, uint64_t handle) -> caf::result<std::string> {
        auto& gets = self->state.gets;
        auto i = gets.find(handle);
        if (i == gets.end()) return make_error(errc::invalid_argument, "unknown get handle");
        if (i->second.result) {
          auto result = std::move(*i->second.result);
          gets.erase(i);
          if (!result) return result.error();
          return std::move(*result);
        }
        auto rp = self->make_response_promise();
        i->second.waiters.push_back(rp);
        return caf::delegated<std::string>{};
      },
      [self](cancel_atom, uint64_t handle) {
        auto& st = self->state;
        auto i = st.gets.find(handle);
        if (i == st.gets.end() || i->second.result || !st.joined) return;
        wire::Envelope env;
        env.mutable_cancel()->set_id(i->second.request_id);
        send_envelope(self, env);
      },
      [self](try_get_atom, const std::string& key) -> caf::result<bool, std::string> {
        wire::Envelope env;
        env.mutable_try_get()->set_key(key);
        auto rp = self->make_response_promise();
        start_request(self, std::move(env), pending_request{pending_request::try_get, rp});
        return caf::delegated<bool, std::string>{};
      },
      [self](get_prefix_atom,
             const std::string& prefix) -> caf::result<std::map<std::string, std::string>> {
        wire::Envelope env;
        env.mutable_get_prefix()->set_prefix(prefix);
        auto rp = self->make_response_promise();
        start_request(self, std::move(env), pending_request{pending_request::get_prefix, rp});
        return caf::delegated<std::map<std::string, std::string>>{};
      },
      [self](erase_prefix_atom, const std::string& prefix) -> caf::result<void> {
        wire::Envelope env;
        env.mutable_erase_prefix()->set_prefix(prefix);
        auto rp = self->make_response_promise();
        start_request(self, std::move(env), pending_request{pending_request::unit, rp});
        return caf::delegated<void>{};
      },
      [self](barrier_atom, const std::string& name, int64_t timeout_ms,
             const std::vector<int32_t>& participants) -> caf::result<void> {
        wire::Envelope env;
        auto* b = env.mutable_barrier();
        b->set_name(name);
        b->set_timeout_ms(timeout_ms);
        for (auto p : participants) b->add_participants(p);
        auto rp = self->make_response_promise();
        start_request(self, std::move(env), pending_request{pending_request::unit, rp});
        return caf::delegated<void>{};
      },
      [self](peer_send_atom, int32_t to_rank, const std::string& channel,
             const std::string& payload) {
        if (!self->state.joined) {
          log(log_level::warning, component, "not joined: dropping message on channel ", channel);
          return;
        }
        wire::Envelope env;
        auto* s = env.mutable_send();
        s->set_to_rank(to_rank);
        s->set_channel(channel);
        s->set_payload(payload);
        send_envelope(self, env);
      },
      [self](report_atom, int32_t code, const std::string& message) {
        if (!self->state.joined) {
          log(log_level::warning, component, "not joined: cannot report error ", code, ": ",
              message);
          return;
        }
        wire::Envelope env;
        env.mutable_error()->set_code(code);
        env.mutable_error()->set_message(message);
        send_envelope(self, env);
      },
      [self](subscribe_atom, const caf::actor& subscriber) {
        self->monitor(subscriber);
        self->state.subscribers.push_back(subscriber);
        for (auto& msg : self->state.unclaimed) self->send(subscriber, msg);
        self->state.unclaimed.clear();
      },
      [self](leave_atom) -> caf::result<void> {
        auto& st = self->state;
        if (st.left || (!st.joined && !st.connected)) {
          st.left = true;
          return caf::unit;
        }
        if (!st.joined) {
          // Still joining: there is nothing to leave, just stop trying.
          st.left = true;
          st.connected = false;
          self->close(st.hdl);
          finish_join(self, make_error(errc::cancelled, "left before joining"));
          return caf::unit;
        }
        wire::Envelope env;
        env.mutable_leave();
        auto rp = self->make_response_promise();
        start_request(self, std::move(env), pending_request{pending_request::leave, rp});
        return caf::delegated<void>{};
      },
  };
}

}  // namespace

caf::actor spawn_coordination_agent(caf::actor_system& sys, agent_config cfg) {
  return sys.middleman().spawn_broker(agent_actor, std::move(cfg));
}

}  // namespace lifeboat
