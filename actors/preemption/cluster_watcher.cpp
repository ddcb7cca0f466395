#include "actors/preemption/cluster_watcher.hpp"

#include <caf/io/middleman.hpp>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_client.hpp"
#include "actors/preemption/decision_recorder.hpp"
#include "actors/preemption/protocol.hpp"
#include "messages/log.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"
#include "messages/wire.hpp"

namespace lifeboat {

const char* cluster_watcher_state::name = "cluster_watcher";

caf::behavior cluster_watcher(caf::io::stateful_broker<cluster_watcher_state>* self,
                              cluster_watcher_peers peers) {
  auto& st = self->state;
  st.resolver = std::move(peers.resolver);
  st.writer = std::move(peers.writer);
  st.exit_controller = std::move(peers.exit_controller);
  return {
      [=](const peer_message& msg) {
        auto& st = self->state;
        if (msg.channel != protocol_channel) return;
        wire::ProtocolMessage body;
        if (!body.ParseFromString(msg.payload)) {
          ++st.malformed;
          log(log_level::warning, "cluster_watcher", "malformed protocol message from rank ",
              msg.from_rank, " dropped");
          return;
        }
        ++st.messages;
        // The commit is recorded here, before anyone hears of it: the exit
        // controller lets the trainer leave on another thread, and a commit
        // the resolver recorded after that leave was never published (seen
        // in a fresh-clone CI: a lane with "exit" and no "commit").
        if (body.has_committed())
          decision_recorder::process().on_committed(body.committed().step());
        self->send(st.resolver, body);
        if (body.has_committed()) {
          st.last_committed_step = body.committed().step();
          if (st.writer) self->send(st.writer, committed_atom::value, body.committed());
          if (st.exit_controller)
            self->send(st.exit_controller, committed_atom::value, body.committed());
        }
      },
      [=](const peer_failure& failure) {
        auto& st = self->state;
        ++st.failures;
        // The resolver hears it here, in order with the protocol messages:
        // the exit controller fails the gate on another thread, later than a
        // query that follows the failure may arrive.
        self->send(st.resolver, failure);
        self->send(st.exit_controller, failure);
      },
      [=](status_atom) {
        auto& st = self->state;
        wire::ActorStatus out;
        out.set_name(cluster_watcher_state::name);
        out.set_state(st.failures > 0 ? "peer_failed" : "following");
        out.set_mailbox(static_cast<int64_t>(self->mailbox().size()));
        (*out.mutable_metrics())["protocol_messages_total"] = static_cast<double>(st.messages);
        (*out.mutable_metrics())["protocol_malformed_total"] = static_cast<double>(st.malformed);
        (*out.mutable_metrics())["peer_failures_total"] = static_cast<double>(st.failures);
        return out;
      },
  };
}

caf::actor spawn_cluster_watcher(caf::actor_system& sys, cluster_watcher_peers peers) {
  return sys.middleman().spawn_broker(cluster_watcher, std::move(peers));
}

}  // namespace lifeboat
