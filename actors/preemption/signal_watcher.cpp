#include "actors/preemption/signal_watcher.hpp"

#include <algorithm>
#include <string>

#include <caf/io/middleman.hpp>

#include "actors/atoms.hpp"
#include "actors/preemption/protocol.hpp"
#include "messages/log.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "platform/clock.hpp"
#include "platform/signal_names.hpp"
#include "platform/signal_pipe.hpp"

namespace lifeboat {

const char* signal_watcher_state::name = "signal_watcher";

namespace {

using self_ptr = caf::io::stateful_broker<signal_watcher_state>*;

// A signal pipe writes one byte per signal; a read never holds more than
// a few, and any number is fine.
constexpr size_t max_signals_per_read = 64;

void on_signal(self_ptr self, int signo) {
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
}

// Says once per signal that another handler took its place, and takes a
// signal that every thread blocked as the notice it is. Seen: a Python
// trainer that blocked SIGTERM on its main thread (signal.pthread_sigmask)
// trained through it, the signal pending, and ended with no checkpoint.
void check_handlers(self_ptr self) {
  auto& st = self->state;
  auto taken = st.training_over && st.training_over()
                   ? std::vector<int>{}
                   : signal_pipe::take_blocked_everywhere(st.signals);
  for (auto signo : taken) {
    log(log_level::warning, "signal_watcher", signal_name(signo),
        " came while every thread of this process blocked it (the trainer's pthread_sigmask, "
        "say): taken by lifeboat's watcher, a notice all the same");
    on_signal(self, signo);
  }
  for (auto signo : signal_pipe::replaced(st.signals)) {
    if (std::find(st.replaced.begin(), st.replaced.end(), signo) != st.replaced.end()) continue;
    st.replaced.push_back(signo);
    log(log_level::warning, "signal_watcher", "another handler replaced lifeboat's for ",
        signal_name(signo), " (the trainer's or a library's: Python's signal.signal, say): a ",
        signal_name(signo), " is no longer a termination notice");
  }
  self->delayed_send(self, st.check_interval, tick_atom::value);
}

std::string watcher_state(const signal_watcher_state& st) {
  if (!st.watching) return "inactive";
  if (st.received > 0) return "notified";
  if (st.replaced.empty()) return "watching";
  std::string out = "handler replaced:";
  for (auto signo : st.replaced) out += " " + signal_name(signo);
  return out;
}

}  // namespace

caf::behavior signal_watcher(self_ptr self, int reader_fd, int64_t grace_period_ms,
                             caf::actor resolver, std::vector<int> signals,
                             std::function<bool()> training_over,
                             std::chrono::milliseconds check_interval) {
  auto& st = self->state;
  st.training_over = std::move(training_over);
  st.resolver = std::move(resolver);
  st.grace_period_ms = grace_period_ms;
  st.watching = reader_fd >= 0;
  st.check_interval = check_interval;
  if (reader_fd >= 0) {
    auto hdl = self->add_scribe(reader_fd);
    self->configure_read(hdl, caf::io::receive_policy::at_most(max_signals_per_read));
    st.signals = std::move(signals);
    if (!st.signals.empty()) self->delayed_send(self, check_interval, tick_atom::value);
  }
  return {
      [=](const caf::io::new_data_msg& msg) {
        for (auto byte : msg.buf) on_signal(self, static_cast<unsigned char>(byte));
      },
      [=](tick_atom) { check_handlers(self); },
      // The pipe is gone: the process is shutting down.
      [=](const caf::io::connection_closed_msg&) {},
      [=](status_atom) {
        wire::ActorStatus st;
        st.set_name(signal_watcher_state::name);
        st.set_state(watcher_state(self->state));
        st.set_mailbox(static_cast<int64_t>(self->mailbox().size()));
        (*st.mutable_metrics())["signals_received_total"] =
            static_cast<double>(self->state.received);
        (*st.mutable_metrics())["signal_handlers_replaced"] =
            static_cast<double>(self->state.replaced.size());
        return st;
      },
  };
}

caf::actor spawn_signal_watcher(caf::actor_system& sys, int reader_fd, int64_t grace_period_ms,
                                caf::actor resolver, std::vector<int> signals,
                                std::function<bool()> training_over,
                                std::chrono::milliseconds check_interval) {
  return sys.middleman().spawn_broker(signal_watcher, reader_fd, grace_period_ms,
                                      std::move(resolver), std::move(signals),
                                      std::move(training_over), check_interval);
}

}  // namespace lifeboat
