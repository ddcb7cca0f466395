// The coordination agent's link to the service: connecting with backoff
// (through TLS when configured), the bytes it delivers,
// the challenge-response join (refusing strangers and impostors), heartbeats
// with the sampled step, the frames the service sends, and the loss of the
// connection.
#include "actors/coordination/coordination_agent_state.hpp"

#include <algorithm>

#include "actors/coordination/coordination_auth.hpp"
#include "actors/coordination/heartbeat_schedule.hpp"
#include "messages/address.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"

namespace lifeboat::agent_detail {

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

void forgive_own_stall(agent_actor_state& st) {
  auto now = std::chrono::steady_clock::now();
  auto now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  auto stalled =
      std::chrono::milliseconds{st.stall.stalled_ms(now_ms, st.heartbeat_interval.count())};
  if (stalled.count() == 0) return;
  log(log_level::warning, component, "this worker did not run for about ", stalled.count(),
      " ms (its process stopped or its host paused): that time is not counted against the "
      "coordination service or the trainer's step");
  st.last_heard += stalled;
  if (st.last_step_seen != std::chrono::steady_clock::time_point{}) st.last_step_seen += stalled;
}

void send_heartbeat(agent_broker* self) {
  auto& st = self->state;
  wire::Envelope env;
  auto* hb = env.mutable_heartbeat();
  hb->set_step_age_ms(sample_step(st));
  hb->set_step(st.last_step);
  if (st.cfg.status_source) hb->set_status(st.cfg.status_source());
  if (st.cfg.paused_source) hb->set_paused(st.cfg.paused_source());
  if (st.cfg.in_step_source) hb->set_in_step(st.cfg.in_step_source());
  if (st.cfg.finished_source) hb->set_finished(st.cfg.finished_source());
  if (st.cfg.blocked_source) hb->set_blocked_ms(st.cfg.blocked_source());
  send_envelope(self, env);
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

void try_connect(agent_broker* self) {
  auto& st = self->state;
  if (st.joined || st.join_error || st.left) return;
  auto hdl = self->add_tcp_scribe(st.cfg.host, st.cfg.port);
  if (hdl) {
    st.hdl = *hdl;
    st.connected = true;
    st.greeted = false;
    st.challenge.clear();
    st.stream = frame_stream{};
    if (st.tls) {
      auto channel = tls_channel::make(st.tls, st.cfg.host);
      if (!channel) {
        st.connected = false;
        self->close(st.hdl);
        finish_join(self, channel.error());
        return;
      }
      st.stream = frame_stream{std::move(*channel)};
    }
    self->configure_read(st.hdl, caf::io::receive_policy::at_most(frame_read_bytes));
    // With TLS, the agent speaks first: its ClientHello.
    st.stream.flush(self, st.hdl);
    self->delayed_send(self, st.cfg.handshake_timeout, handshake_deadline_atom::value,
                       ++st.connection_serial);
    return;
  }
  if (std::chrono::steady_clock::now() + st.backoff >= st.join_deadline) {
    auto where = host_port(st.cfg.host, st.cfg.port);
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
  if (auto now = std::chrono::steady_clock::now();
      now - st.unreachable_told >= unreachable_report_interval) {
    st.unreachable_told = now;
    using std::chrono::duration_cast;
    using std::chrono::seconds;
    log(log_level::warning, component, "cannot reach the coordination service at ",
        host_port(st.cfg.host, st.cfg.port), " for ",
        duration_cast<seconds>(now - st.join_started).count(), " s (",
        self->system().render(hdl.error()), "); trying again for ",
        duration_cast<seconds>(st.join_deadline - now).count(), " s more");
  }
  self->delayed_send(self, st.backoff, connect_atom::value);
  st.backoff = std::min(st.backoff * 2, max_backoff);
}

void on_bytes(agent_broker* self, const caf::io::new_data_msg& msg) {
  auto& st = self->state;
  if (!st.connected || msg.handle != st.hdl) return;
  st.last_heard = std::chrono::steady_clock::now();
  if (auto err = st.stream.receive(self, st.hdl, msg.buf.data(), msg.buf.size())) {
    self->close(st.hdl);
    if (!st.joined) {
      // A peer that fails TLS's checks holds neither the job's key nor its
      // certificates, or does not speak TLS: as a stranger, it is refused.
      st.connected = false;
      refuse_stranger(self, describe(err) + " (the service and every worker need the same " +
                                tls_env + ", and the same cluster token or certificate authority)");
      return;
    }
    on_connection_lost(self, describe(err));
    return;
  }
  // One read may hold several frames; one may end the connection.
  for (wire::Envelope env; st.connected && msg.handle == st.hdl; env.Clear()) {
    switch (st.stream.next(env)) {
      case frame_splitter::status::need_more:
        st.stream.flush(self, st.hdl);
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
}

void refuse_stranger(agent_broker* self, const std::string& why) {
  auto& st = self->state;
  auto what = "the peer at " + host_port(st.cfg.host, st.cfg.port) +
              " is not a lifeboat coordination service: " + why;
  log(log_level::error, component, what);
  finish_join(self, make_error(errc::refused, what));
}

bool proves_token(const agent_actor_state& st, const wire::JoinReply& reply) {
  auto expected =
      service_proof(st.cfg.token, st.challenge, st.cfg.rank, st.cfg.world_size, reply.generation());
  return !st.challenge.empty() && mac_equal(expected, reply.proof());
}

void refuse_impostor(agent_broker* self) {
  auto& st = self->state;
  auto what = "the coordination service at " + host_port(st.cfg.host, st.cfg.port) +
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
      st.heartbeat_interval = st.cfg.heartbeat_interval;
      // Never faster than the shortest timeout's heartbeats, whatever it asks.
      if (auto asked = std::max(std::chrono::milliseconds{env.join_reply().heartbeat_interval_ms()},
                                heartbeat_interval_for(min_heartbeat_timeout));
          env.join_reply().heartbeat_interval_ms() > 0 && asked < st.heartbeat_interval) {
        log(log_level::info, component, "the coordination service needs a heartbeat every ",
            asked.count(), " ms, not every ", st.heartbeat_interval.count(), " ms");
        st.heartbeat_interval = asked;
      }
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
  fail_pending(self, make_error(errc::unavailable, service_lost_message));
  if (st.cfg.service_rank >= 0 && st.cfg.service_rank != st.cfg.rank) {
    auto what = std::string{host_lost_message} + ": " + why;
    log(log_level::error, component, "rank ", st.cfg.service_rank, " lost: ", what);
    notify(self, caf::make_message(peer_failure{
                     st.cfg.service_rank, static_cast<int32_t>(errc::peer_lost), what, true}));
    return;
  }
  auto what = std::string{service_lost_message} + ": " + why;
  log(log_level::error, component, what);
  notify(self,
         caf::make_message(peer_failure{-1, static_cast<int32_t>(errc::unavailable), what, true}));
}

}  // namespace lifeboat::agent_detail
