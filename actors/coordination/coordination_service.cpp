#include "actors/coordination/coordination_service.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <caf/io/broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/network/multiplexer.hpp>

#include "actors/atoms.hpp"
#include "actors/coordination/broker_subscribers.hpp"
#include "actors/coordination/coordination_auth.hpp"
#include "actors/coordination/coordination_frame.hpp"
#include "actors/coordination/coordination_state.hpp"
#include "actors/coordination/frame_stream.hpp"
#include "actors/coordination/heartbeat_schedule.hpp"
#include "actors/coordination/stall_watch.hpp"
#include "actors/coordination/worker_listing.hpp"
#include "messages/address.hpp"
#include "messages/log.hpp"
#include "messages/wire.hpp"

namespace lifeboat {

namespace {

constexpr const char* component = "coordination_service";

// The service's own: the frames queued in one batch of the I/O thread's
// events go out (apply_output).
using flush_atom = caf::atom_constant<caf::atom("flush")>;
// The service's own: its periodic look for a stall of its own (stall_watch).
using stall_check_atom = caf::atom_constant<caf::atom("stallchk")>;

// How often the service looks whether it itself stalled.
constexpr auto stall_check_period = std::chrono::milliseconds{500};

int64_t steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct service_actor_state {
  std::unique_ptr<coordination_state> logic;
  status_annotator annotate_status;
  std::map<conn_id, frame_stream> readers;
  // Connections whose stream has frames queued, and whether a flush_atom is
  // on its way to send them.
  std::vector<conn_id> queued;
  bool flush_sent = false;
  std::shared_ptr<tls_context> tls;  // null: clear text
  std::vector<caf::actor> subscribers;
  // Due times of the ticks already in flight; a new one is sent only when the
  // state's next deadline comes before all of them.
  std::multiset<int64_t> ticks;
  stall_watch stall;
  static inline const char* name = "coordination_service";
};

using service_broker = caf::io::stateful_broker<service_actor_state>;

caf::io::connection_handle handle_of(conn_id conn) {
  return caf::io::connection_handle::from_int(conn);
}

// Forgives the workers a stall of the service's own before anything is
// judged by the clock: run at its periodic check and before each tick, so
// whichever comes first after the process runs again sees the stall.
void check_own_stall(service_broker* self) {
  auto now = steady_now_ms();
  if (auto stalled = self->state.stall.stalled_ms(now, stall_check_period.count()); stalled > 0)
    self->state.logic->forgive_stall(stalled, now);
}

void schedule_tick(service_broker* self) {
  auto due = self->state.logic->next_deadline_ms();
  if (!due) return;
  auto& ticks = self->state.ticks;
  if (!ticks.empty() && *ticks.begin() <= *due) return;
  ticks.insert(*due);
  auto delay = std::max<int64_t>(*due - steady_now_ms(), 0);
  self->delayed_send(self, std::chrono::milliseconds(delay), tick_atom::value, *due);
}

// Sends `conn`'s queued frames: at the end of a batch, or as it is about to close.
void flush_connection(service_broker* self, conn_id conn) {
  if (auto r = self->state.readers.find(conn); r != self->state.readers.end())
    r->second.flush(self, handle_of(conn));
}

// Sends what the connections' streams queued.
void flush_queued(service_broker* self) {
  auto& st = self->state;
  for (auto conn : st.queued) flush_connection(self, conn);
  st.queued.clear();
  st.flush_sent = false;
}

// Carries out what the state asked for: frames first, so a refusal reaches
// the peer before its connection closes (close is graceful).
//
// The frames wait in their connection's stream until the I/O thread has
// handled the batch of events it is in: the flush_atom sent here is taken
// after that batch (CAF 0.17 runs the actors that the I/O thread itself
// woke before it polls again). In a round of 1,024 workers the service
// takes the reports of hundreds of workers in one batch, and each was
// one send to the leader: 1,023 sends of a few dozen bytes, which were a
// third of the service's sends in a round, now leave as a few writes.
void apply_output(service_broker* self) {
  auto out = self->state.logic->take_output();
  auto& st = self->state;
  auto queue = [&](conn_id conn, const std::vector<char>& bytes) {
    auto r = st.readers.find(conn);
    if (r == st.readers.end()) return;
    if (!r->second.has_queued()) st.queued.push_back(conn);
    r->second.queue(bytes);
  };
  auto run = out.broadcasts.begin();
  for (size_t i = 0; i < out.frames.size();) {
    // A broadcast is encoded once for all its connections.
    if (run != out.broadcasts.end() && run->first == i) {
      auto bytes = encode_frame(out.frames[i].second);
      for (auto end = i + run->count; i < end; ++i) queue(out.frames[i].first, bytes);
      ++run;
      continue;
    }
    auto& [conn, env] = out.frames[i++];
    queue(conn, encode_frame(env));
  }
  for (auto conn : out.closes) {
    flush_connection(self, conn);
    st.readers.erase(conn);
    self->close(handle_of(conn));
  }
  if (!st.queued.empty() && !st.flush_sent) {
    st.flush_sent = true;
    self->send(self, flush_atom::value);
  }
  for (auto& ev : out.events)
    for (auto& sub : st.subscribers) self->send(sub, ev);
  schedule_tick(self);
}

void drop_connection(service_broker* self, conn_id conn, const std::string& why) {
  log(log_level::warning, component, "closing connection ", conn, " from ",
      self->remote_addr(handle_of(conn)), ": ", why);
  flush_connection(self, conn);
  self->state.readers.erase(conn);
  self->close(handle_of(conn));
  self->state.logic->on_disconnect(conn, steady_now_ms());
  apply_output(self);
}

// A fresh connection's stream: clear text, or a TLS session that waits for
// the agent's first handshake bytes (the greeting is held until it ends).
caf::expected<frame_stream> open_stream(service_broker* self) {
  if (!self->state.tls) return frame_stream{};
  auto channel = tls_channel::make(self->state.tls);
  if (!channel) return channel.error();
  return frame_stream{std::move(*channel)};
}

caf::behavior service_actor(service_broker* self, caf::io::doorman_ptr doorman, service_config cfg,
                            std::shared_ptr<tls_context> tls) {
  // Every worker may be joining at once: at 1,024 the bound of 64 closed
  // connections at accept during a start, and their agents waited out a
  // backoff to try again. The world size is the number of legitimate ones.
  self->state.logic = std::make_unique<coordination_state>(coordination_state::config{
      cfg.world_size, cfg.token, static_cast<int64_t>(cfg.heartbeat_timeout.count()),
      static_cast<int64_t>(cfg.join_bound.count()),
      std::max(max_unjoined_connections, static_cast<size_t>(cfg.world_size))});
  self->state.annotate_status = std::move(cfg.annotate_status);
  self->state.tls = std::move(tls);
  self->add_doorman(std::move(doorman));
  close_on_exit_forget_on_down(self, self->state.subscribers);
  self->send(self, stall_check_atom::value);
  return {
      [self](const caf::io::new_connection_msg& msg) {
        auto conn = msg.handle.id();
        auto stream = open_stream(self);
        if (!stream) {
          log(log_level::error, component, "closing connection ", conn, ": ",
              describe(stream.error()));
          self->close(msg.handle);
          return;
        }
        self->state.readers.emplace(conn, std::move(*stream));
        self->configure_read(msg.handle, caf::io::receive_policy::at_most(frame_read_bytes));
        self->state.logic->on_connect(conn, make_join_nonce(), steady_now_ms());
        apply_output(self);
      },
      [self](const caf::io::new_data_msg& msg) {
        auto conn = msg.handle.id();
        auto i = self->state.readers.find(conn);
        if (i == self->state.readers.end()) return;
        if (auto err = i->second.receive(self, msg.handle, msg.buf.data(), msg.buf.size())) {
          drop_connection(self, conn, describe(err));
          return;
        }
        // One read may hold several frames; a frame may close the connection
        // (a refused join), which drops its reader: look it up each time.
        for (wire::Envelope env;; env.Clear()) {
          i = self->state.readers.find(conn);
          if (i == self->state.readers.end()) return;
          switch (i->second.next(env)) {
            case frame_splitter::status::need_more:
              i->second.flush(self, msg.handle);
              return;
            case frame_splitter::status::oversized:
              drop_connection(
                  self, conn,
                  "frame larger than the limit of " + std::to_string(max_frame_bytes) + " bytes");
              return;
            case frame_splitter::status::malformed:
              drop_connection(self, conn, "frame is not a coordination envelope");
              return;
            case frame_splitter::status::frame:
              self->state.logic->on_frame(conn, env, steady_now_ms());
              apply_output(self);
              break;
          }
        }
      },
      [self](const caf::io::connection_closed_msg& msg) {
        auto conn = msg.handle.id();
        self->state.readers.erase(conn);
        self->state.logic->on_disconnect(conn, steady_now_ms());
        apply_output(self);
      },
      [self](const caf::io::acceptor_closed_msg&) {
        log(log_level::error, component, "listening socket closed");
      },
      [self](tick_atom, int64_t due) {
        auto& ticks = self->state.ticks;
        if (auto i = ticks.find(due); i != ticks.end()) ticks.erase(i);
        check_own_stall(self);
        self->state.logic->on_tick(steady_now_ms());
        apply_output(self);
      },
      [self](stall_check_atom) {
        check_own_stall(self);
        self->delayed_send(self, stall_check_period, stall_check_atom::value);
      },
      [self](flush_atom) { flush_queued(self); },
      [self](workers_atom) { return self->state.logic->workers(steady_now_ms()); },
      [self](snapshot_atom, const std::string& prefix) {
        return self->state.logic->snapshot(prefix);
      },
      [self](subscribe_atom, const caf::actor& subscriber) {
        self->monitor(subscriber);
        self->state.subscribers.push_back(subscriber);
        // A late subscriber hears of the ranks already here first: one that
        // waits for every worker to leave must not take the first departure
        // it sees for the last.
        for (auto& ev : self->state.logic->present_workers()) self->send(subscriber, ev);
      },
      [self](exited_atom, int32_t rank, uint32_t generation, const std::string& how) {
        self->state.logic->on_process_exit(rank, generation, how, steady_now_ms());
        apply_output(self);
      },
      [self](peer_send_atom, int32_t to_rank, std::string& channel, std::string& payload) {
        wire::PeerSend req;
        req.set_to_rank(to_rank);
        req.set_channel(std::move(channel));
        req.set_payload(std::move(payload));
        self->state.logic->on_service_send(req);
        apply_output(self);
      },
      [self](reset_atom) {
        log(log_level::info, component, "reset: dropping all state");
        self->state.logic->reset();
        apply_output(self);
      },
      [self](status_atom) {
        wire::ActorStatus st;
        st.set_name(service_actor_state::name);
        st.set_state("running");
        st.set_mailbox(static_cast<int64_t>(self->mailbox().size()));
        // The service's step is the furthest any worker reported, and its
        // phase (from the annotator) the cluster's: a coordinator has neither
        // of its own, and on rank 0 the step resolver answers first with the
        // worker's own (the endpoint keeps the first).
        int64_t furthest = 0;
        for (auto& w : self->state.logic->workers(steady_now_ms())) {
          furthest = std::max(furthest, w.step());
          *st.add_workers() = w;
        }
        st.set_step(furthest);
        (*st.mutable_metrics())["coordination_connections"] =
            static_cast<double>(self->state.logic->connections());
        (*st.mutable_metrics())["coordination_generation"] =
            static_cast<double>(self->state.logic->generation());
        if (self->state.annotate_status) self->state.annotate_status(*self->state.logic, st);
        // Trimmed only now: the annotator's cluster phase counts every rank.
        std::vector<wire::WorkerInfo> rows(st.workers().begin(), st.workers().end());
        st.clear_workers();
        list_workers(std::move(rows), st);
        return st;
      },
  };
}

// CAF's error for a port it could not open keeps no errno ("tcp socket
// creation failed"): a bind of our own, after CAF's failed, says why (most
// often "Address already in use"). None when that bind succeeds after all.
std::optional<std::string> why_not_bound(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    return std::string{::gai_strerror(rc)};
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned{found, ::freeaddrinfo};
  int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  if (fd < 0) return std::string{std::strerror(errno)};
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  std::optional<std::string> why;
  if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0) why = std::strerror(errno);
  ::close(fd);
  return why;
}

}  // namespace

caf::expected<std::pair<caf::actor, uint16_t>> spawn_coordination_service(caf::actor_system& sys,
                                                                          service_config cfg) {
  if (cfg.world_size < 1)
    return make_error(errc::invalid_config, "coordination service: world size must be >= 1");
  if (cfg.join_bound.count() <= 0)
    return make_error(errc::invalid_config, "coordination service: join bound must be > 0");
  if (cfg.heartbeat_timeout < min_heartbeat_timeout)
    return make_error(errc::invalid_config,
                      "coordination service: heartbeat timeout must be at least " +
                          std::to_string(min_heartbeat_timeout.count()) + " ms, not " +
                          std::to_string(cfg.heartbeat_timeout.count()) + " ms");
  std::shared_ptr<tls_context> tls;
  if (cfg.tls.enabled) {
    auto made = tls_context::shared(cfg.tls, cfg.token, tls_role::server);
    if (!made) return made.error();
    tls = std::move(*made);
  }
  // The socket is opened here rather than inside the broker so that the bound
  // port (port 0 picks a free one) can be returned to the caller.
  auto doorman = sys.middleman().backend().new_tcp_doorman(cfg.port, cfg.host.c_str(), true);
  if (!doorman)
    return make_error(errc::unavailable,
                      "coordination service: cannot listen on " + host_port(cfg.host, cfg.port) +
                          ": " +
                          why_not_bound(cfg.host, cfg.port).value_or(sys.render(doorman.error())));
  auto port = (*doorman)->port();
  auto actor =
      sys.middleman().spawn_broker(service_actor, std::move(*doorman), std::move(cfg), tls);
  log(log_level::info, component, "listening on port ", port);
  if (tls)
    log(log_level::info, component, "TLS 1.3 on every connection, authenticated by ",
        tls->uses_certificates() ? "certificates" : "a key derived from the cluster token");
  return std::make_pair(caf::actor{actor}, port);
}

}  // namespace lifeboat
