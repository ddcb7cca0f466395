#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/io/broker.hpp>

namespace lifeboat {

/// Turns the signals that a signal_pipe writes into a termination notice with
/// a deadline (now + grace period) for the step resolver. The first signal is
/// acted on; later ones are counted and logged. It reads the pipe's socket
/// itself, on the middleman's I/O thread, so a signal reaches the resolver
/// after one thread wake-up. Every check_interval it checks that the
/// signals it watches still have the pipe's handler: one that another
/// handler replaced (Python's signal.signal in the trainer or a library)
/// never comes as a notice, which it says once per signal in a warning and
/// in its status. At the same check it takes a watched signal that every
/// thread blocked (signal_pipe::take_blocked_everywhere) as a notice, with a
/// warning. Messages:
///   (status_atom) -> wire::ActorStatus
/// Lifetime: owns the reading end it is given; worker_actors spawns and
/// stops it. Thread-safety: an actor on the middleman's I/O thread.
/// How often the watcher checks that its signals still have the pipe's handler.
constexpr std::chrono::milliseconds handler_check_interval{1000};

struct signal_watcher_state {
  static const char* name;
  caf::actor resolver;
  int64_t grace_period_ms = 0;
  int64_t received = 0;
  bool watching = false;
  std::vector<int> signals;   // the pipe's, checked for a replaced handler
  std::vector<int> replaced;  // those found with another handler, told once
  // True once the training loop ended: a signal every thread blocks is then
  // an application's, held until it exits (lifeboat-demo's), and stays so.
  std::function<bool()> training_over;
  std::chrono::milliseconds check_interval{handler_check_interval};
};

/// `reader_fd`: a reading end from signal_pipe::open_reader, which the
/// watcher owns from here on; -1 when no signal pipe is installed.
/// `signals`: the pipe's signals, whose handler it checks. `training_over`
/// (empty: never), called on the watcher's thread: see its state's field.
caf::behavior signal_watcher(caf::io::stateful_broker<signal_watcher_state>* self, int reader_fd,
                             int64_t grace_period_ms, caf::actor resolver, std::vector<int> signals,
                             std::function<bool()> training_over,
                             std::chrono::milliseconds check_interval);

/// Spawns the signal watcher on the middleman's I/O thread, the step
/// resolver's (see spawn_step_resolver): the notice reaches the resolver
/// without waking a scheduler thread on the way.
caf::actor spawn_signal_watcher(caf::actor_system& sys, int reader_fd, int64_t grace_period_ms,
                                caf::actor resolver, std::vector<int> signals = {},
                                std::function<bool()> training_over = {},
                                std::chrono::milliseconds check_interval = handler_check_interval);

}  // namespace lifeboat
