#pragma once

// What the actor tests do from a scoped actor that stands in for an actor's
// peers: ask for its status (a round trip, so whatever was sent to it before
// has been handled) and take what it sent to the peer. Every wait is bounded;
// none is a sleep.

#include <chrono>

#include <caf/actor.hpp>
#include <caf/after.hpp>
#include <caf/error.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/typed_actor.hpp>

#include <gtest/gtest.h>

#include "actors/atoms.hpp"
#include "messages/status.pb.h"
#include "messages/wire.hpp"

namespace lifeboat::test {

/// How long a test waits for an actor's answer before it fails.
constexpr auto wait_bound = std::chrono::seconds{10};

/// The status `actor` answers to `self` within `bound`; a missing answer
/// fails the test.
inline wire::ActorStatus status_of(caf::scoped_actor& self, const caf::actor& actor,
                                   std::chrono::milliseconds bound = wait_bound) {
  wire::ActorStatus out;
  self->request(actor, bound, status_atom::value)
      .receive([&](const wire::ActorStatus& st) { out = st; },
               [](caf::error& err) { FAIL() << caf::to_string(err); });
  return out;
}

/// The same for an actor with a typed interface: each of lifeboat's answers
/// (status_atom).
template <class... Sigs>
wire::ActorStatus status_of(caf::scoped_actor& self, const caf::typed_actor<Sigs...>& actor,
                            std::chrono::milliseconds bound = wait_bound) {
  return status_of(self, caf::actor_cast<caf::actor>(actor), bound);
}

/// Takes every message `self` holds now that one of `handlers` matches, each
/// with its handler, without waiting for more; returns how many it took.
template <class... Handlers>
int take_held(caf::scoped_actor& self, Handlers... handlers) {
  int turns = 0;
  for (bool more = true; more; ++turns)
    self->receive(
        handlers..., caf::after(std::chrono::seconds{0}) >> [&] { more = false; });
  // Every turn took one message but the last, which found none.
  return turns - 1;
}

}  // namespace lifeboat::test
