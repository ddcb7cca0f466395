#include "actors/signal_watcher.hpp"

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
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

caf::behavior signal_watcher(caf::stateful_actor<signal_watcher_state>* self,
                             std::vector<int> signals, int64_t grace_period_ms,
                             caf::actor resolver) {
  auto& st = self->state;
  st.resolver = std::move(resolver);
  st.grace_period_ms = grace_period_ms;
  // The pipe's thread holds only a weak address, so it never keeps this actor alive.
  caf::actor_addr me = self->address();
  auto pipe = signal_pipe::install(std::move(signals), [me](int signo) {
    if (auto hdl = caf::actor_cast<caf::actor>(me)) caf::anon_send(hdl, signal_atom::value, signo);
  });
  if (pipe)
    st.pipe = std::move(*pipe);
  else
    log(log_level::error, "signal_watcher", "signals not watched: ", describe(pipe.error()));
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
        st.set_state(self->state.pipe == nullptr ? "inactive"
                     : self->state.received > 0  ? "notified"
                                                 : "watching");
        st.set_mailbox(static_cast<int64_t>(self->mailbox().size()));
        (*st.mutable_metrics())["signals_received_total"] =
            static_cast<double>(self->state.received);
        return st;
      },
  };
}

}  // namespace lifeboat
