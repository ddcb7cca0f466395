#pragma once

#include <cstdint>
#include <string>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_events.hpp"
#include "actors/preemption/protocol.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"

namespace lifeboat {

// The typed interfaces of the preemption protocol's event-based actors,
// declared once here, beside the protocol's atoms: a sender holds one of
// these handles and the compiler refuses a message the actor does not take.
// Each actor's header says what each message means and who sends it.
//
// The step resolver, the cluster watcher and the signal watcher stay untyped
// (caf::actor): they are brokers, spawned with spawn_broker on the
// middleman's I/O thread so that a message crosses no thread on its way from
// the socket to the decision, and CAF 0.17's typed brokers
// (caf::io::typed_broker) must list the connection events in their
// interface and are spawned differently; the protocol message they carry is
// one protobuf type, checked when it is parsed.
// The preemption watcher's follower stays untyped too: it is private to
// preemption_watcher.cpp, and its only sender is the coordination service (a
// broker), which holds its subscribers as caf::actor.

/// The checkpoint writer (checkpoint_writer.hpp).
using checkpoint_writer_actor =
    caf::typed_actor<caf::reacts_to<saving_atom, int64_t>,
                     caf::reacts_to<saved_atom, int64_t, bool, wire::CheckpointInfo, double>,
                     caf::reacts_to<save_failed_atom, int64_t, std::string>,
                     caf::reacts_to<persisted_atom, int64_t>,
                     caf::reacts_to<committed_atom, wire::SaveCommitted>,
                     caf::replies_to<status_atom>::with<wire::ActorStatus>>;

/// The exit controller (exit_controller.hpp). It sends watchdog_atom to
/// itself only.
using exit_controller_actor =
    caf::typed_actor<caf::reacts_to<peer_failure>,
                     caf::reacts_to<committed_atom, wire::SaveCommitted>,
                     caf::reacts_to<exit_now_atom, bool>, caf::reacts_to<watchdog_atom, int>,
                     caf::replies_to<status_atom>::with<wire::ActorStatus>>;

/// The poll watcher (poll_watcher.hpp). Its pollers send notice_atom and
/// acknowledged_atom.
using poll_watcher_actor = caf::typed_actor<caf::reacts_to<notice_atom, std::string, wire::Notice>,
                                            caf::replies_to<acknowledge_atom>::with<void>,
                                            caf::reacts_to<acknowledged_atom, std::string>,
                                            caf::replies_to<status_atom>::with<wire::ActorStatus>>;

}  // namespace lifeboat
