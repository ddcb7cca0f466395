#include "actors/signal_watcher.hpp"

#include <caf/actor_cast.hpp>
#include <caf/io/middleman.hpp>
#include <caf/send.hpp>

#include "actors/atoms.hpp"
#include "actors/protocol.hpp"
#include "messages/log.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "platform/clock.hpp"
#include "platform/signal_names.hpp"

namespace lifeboat {

const char* signal_watcher_state::name = "signal_watcher";

void signal_relay::on_signal(int signo) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (auto hdl = caf::actor_cast<caf::actor>(watcher_))
    caf::anon_send(hdl, signal_atom::value, signo);
  else
    pending_.push_back(signo);
}

void signal_relay::attach(const caf::actor& watcher) {
  std::lock_guard<std::mutex> guard{mtx_};
  // The relay holds only a weak address, so it never keeps the actor alive.
  watcher_ = watcher.address();
  for (int signo : pending_) caf::anon_send(watcher, signal_atom::value, signo);
  pending_.clear();
}

caf::behavior signal_watcher(caf::io::stateful_broker<signal_watcher_state>* self, bool watching,
                             int64_t grace_period_ms, caf::actor resolver) {
  auto& st = self->state;
  st.resolver = std::move(resolver);
  st.grace_period_ms = grace_period_ms;
  st.watching = watching;
  return {
      [=](signal_atom, int signo) {
        auto& st = self->state;
        if (++st.received > 1) {
          log(log_level::info, "signal_watcher", signal_name(signo),
              " received again; the first notice stands");
          return;
        }
        wire::Notice notice;
        notice.set_source("signal:" + signal_name(signo));
        notice.set_reason(signal_name(signo) + " received");
        auto now = unix_now_ms();
        notice.set_received_unix_ms(now);
        notice.set_deadline_unix_ms(now + st.grace_period_ms);
        self->send(st.resolver, notice_atom::value, notice);
      },
      [=](status_atom) {
        wire::ActorStatus st;
        st.set_name(signal_watcher_state::name);
        st.set_state(!self->state.watching      ? "inactive"
                     : self->state.received > 0 ? "notified"
                                                : "watching");
        st.set_mailbox(static_cast<int64_t>(self->mailbox().size()));
        (*st.mutable_metrics())["signals_received_total"] =
            static_cast<double>(self->state.received);
        return st;
      },
  };
}

caf::actor spawn_signal_watcher(caf::actor_system& sys, bool watching, int64_t grace_period_ms,
                                caf::actor resolver) {
  return sys.middleman().spawn_broker(signal_watcher, watching, grace_period_ms,
                                      std::move(resolver));
}

}  // namespace lifeboat
