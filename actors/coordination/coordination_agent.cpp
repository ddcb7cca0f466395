// The coordination agent's behaviour: each message of its interface
// (coordination_agent.hpp) mapped onto the requests and the link.
#include "actors/coordination/coordination_agent.hpp"

#include <caf/io/middleman.hpp>

#include "actors/coordination/broker_subscribers.hpp"
#include "actors/coordination/coordination_agent_state.hpp"
#include "messages/address.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "messages/utf8.hpp"

namespace lifeboat {

namespace {

using namespace agent_detail;

caf::behavior agent_actor(agent_broker* self, agent_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.join_started = st.unreachable_told = std::chrono::steady_clock::now();
  st.join_deadline = st.join_started + st.cfg.join_timeout;
  close_on_exit_forget_on_down(self, self->state.subscribers);
  if (st.cfg.tls.enabled) {
    auto tls = tls_context::shared(st.cfg.tls, st.cfg.token, tls_role::client);
    if (tls)
      st.tls = std::move(*tls);
    else
      finish_join(self, tls.error());
  }
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
                                     "not joined to the coordination service at " +
                                         host_port(st.cfg.host, st.cfg.port) + " within " +
                                         std::to_string(st.cfg.join_timeout.count()) + " ms"));
      },
      [self](handshake_deadline_atom, uint64_t serial) {
        auto& st = self->state;
        if (!st.connected || st.greeted || serial != st.connection_serial) return;
        self->close(st.hdl);
        st.connected = false;
        // A service with TLS on waits for the worker's handshake in silence.
        refuse_stranger(self, "it did not greet within " +
                                  std::to_string(st.cfg.handshake_timeout.count()) + " ms" +
                                  (st.tls ? ""
                                          : std::string{" (if it has TLS on, set "} + tls_env +
                                                "=1 for the workers too)"));
      },
      [self](const caf::io::new_data_msg& msg) { on_bytes(self, msg); },
      [self](const caf::io::connection_closed_msg& msg) {
        if (msg.handle == self->state.hdl && self->state.connected)
          on_connection_lost(self, "connection closed");
      },
      [self](step_sample_atom) {
        auto& st = self->state;
        if (!st.joined) return;
        forgive_own_stall(st);
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
        forgive_own_stall(st);
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
        self->delayed_send(self, st.heartbeat_interval, tick_atom::value);
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
             const std::vector<int32_t>& participants, bool absent_hung) -> caf::result<void> {
        wire::Envelope env;
        auto* b = env.mutable_barrier();
        b->set_name(name);
        b->set_timeout_ms(timeout_ms);
        b->set_absent_hung(absent_hung);
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
        if (auto oversized = send_envelope(self, env))
          log(log_level::error, component, "dropping message on channel ", channel, ": ",
              *oversized);
      },
      [self](report_atom, int32_t code, const std::string& message) {
        if (!self->state.joined) {
          // After its leave a rank's part in the job is over: what fails
          // since (most often its peers' failure, echoed) goes to no one.
          log(self->state.left ? log_level::debug : log_level::warning, component,
              "not joined: cannot report error ", code, ": ", message);
          return;
        }
        wire::Envelope env;
        env.mutable_error()->set_code(code);
        env.mutable_error()->set_message(bounded_error_message(message));
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
        // A last heartbeat first: the service's row of a rank that left
        // keeps what the rank last sent, and the periodic one may be up to
        // an interval old (a worker that saved and exited within it was
        // listed as leaving in "training", at a step before the saved one).
        send_heartbeat(self);
        wire::Envelope env;
        env.mutable_leave();
        auto rp = self->make_response_promise();
        start_request(self, std::move(env), pending_request{pending_request::leave, rp});
        return caf::delegated<void>{};
      },
  };
}

}  // namespace

std::string bounded_error_message(const std::string& message) {
  auto text = to_utf8(message);
  auto kept = utf8_prefix(text, max_error_message_bytes);
  if (kept.size() == text.size()) return text;
  return std::string{kept} + " ... (" + std::to_string(text.size() - kept.size()) + " more bytes)";
}

caf::actor spawn_coordination_agent(caf::actor_system& sys, agent_config cfg) {
  return sys.middleman().spawn_broker(agent_actor, std::move(cfg));
}

}  // namespace lifeboat
