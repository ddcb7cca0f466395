#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/expected.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"

#include "actors/status/status_http_server.hpp"
#include "messages/status.pb.h"
#include "messages/wire.hpp"

namespace lifeboat {

/// (http_request_atom, uint64_t id, std::string method, std::string target):
/// the endpoint's own HTTP server hands it a request; the endpoint answers
/// through status_http_server::complete(id, ...). Sent within the process only.
using http_request_atom = caf::atom_constant<caf::atom("httpreq")>;

/// The endpoint's interface:
///   (http_request_atom, id, method, target)  a request from its own HTTP thread
///   (status_atom) -> wire::ActorStatus       its own status ("status_endpoint")
///   (caf::add_atom, caf::actor)              observe one more actor (any actor
///                                            answering status_atom)
using status_endpoint_actor =
    caf::typed_actor<caf::reacts_to<http_request_atom, uint64_t, std::string, std::string>,
                     caf::replies_to<status_atom>::with<wire::ActorStatus>,
                     caf::reacts_to<caf::add_atom, caf::actor>>;

/// Log component of the endpoint; the line "status endpoint listening on
/// 127.0.0.1:PORT" is written under it once the socket is bound.
constexpr const char* status_endpoint_component = "status_endpoint";

/// The name under which the endpoint reports itself in `actors`.
constexpr const char* status_endpoint_name = "status_endpoint";

/// The rank a coordinator's endpoint reports: it is no worker.
constexpr int coordinator_status_rank = -1;

struct status_endpoint_config {
  static constexpr std::chrono::milliseconds default_ask_timeout{500};

  int rank = 0;
  int world_size = 1;
  /// 0: any free port (the actual one is returned by spawn_status_endpoint).
  uint16_t port = 0;
  /// The address bound (LIFEBOAT_STATUS_HOST): loopback unless a scraper on
  /// another host must reach it.
  std::string host = "127.0.0.1";
  /// Actors asked (status_atom) on every request; more can be added later
  /// with (caf::add_atom, caf::actor). The endpoint keeps weak references only.
  std::vector<caf::actor> observed;
  /// An observed actor that does not answer within this time is reported
  /// with state "unresponsive".
  std::chrono::milliseconds ask_timeout = default_ask_timeout;
  status_http_limits limits;
  /// Answers /rates, /timeline and /checkpoints (history_atom: the preemption
  /// module's spawn_job_history or spawn_local_history); the endpoint links
  /// to it. None: those routes answer 404.
  caf::actor history;
};

/// Renders a Status as the JSON of GET /status: proto field names, every
/// field present, in the proto's order, and 64-bit integers as JSON numbers
/// (proto3's JSON mapping would print them as strings; exact up to 2^53).
std::string status_to_json(const wire::Status& status);

/// The plain logic of the endpoint, driven by its actor and by unit tests
/// without a scheduler or a socket: which actors it observes, how a request
/// is routed, how the answers of the observed actors merge into one Status,
/// and how each route is rendered.
class status_endpoint_state {
 public:
  enum class route { status, metrics, healthz, page, not_found, method_not_allowed };

  /// State names that make /healthz answer 503 when any actor reports them.
  static constexpr const char* unresponsive_state = "unresponsive";
  static constexpr const char* down_state = "down";
  static constexpr const char* error_state = "error";
  /// The phase reported while no observed actor reports one.
  static constexpr const char* default_phase = "training";

  status_endpoint_state(int rank, int world_size);

  /// Adds an actor to observe; an actor already observed is ignored.
  void observe(const caf::actor_addr& addr);

  const std::vector<caf::actor_addr>& observed() const { return observed_; }

  /// Remembers the name an observed actor gave, to name it when it later
  /// stops answering.
  void learn_name(const caf::actor_addr& addr, const std::string& name);

  /// The stand-in for an observed actor that gave no answer (`state` is
  /// unresponsive_state or down_state).
  wire::ActorStatus missing_answer(const caf::actor_addr& addr, const char* state) const;

  static route classify(const std::string& method, const std::string& target);

  /// Whether rendering `r` needs the answers of the observed actors.
  static bool needs_answers(route r);

  /// Merges the answers (one per observed actor plus the endpoint's own):
  /// step and phase from the first answer that has them, last_checkpoint,
  /// restored and workers likewise, and one `actors` entry per answer.
  wire::Status merge(const std::vector<wire::ActorStatus>& answers) const;

  static bool healthy(const std::vector<wire::ActorStatus>& answers);

  /// The reply for `r` from the gathered answers (ignored by routes that do
  /// not need them).
  status_http_reply render(route r, const std::vector<wire::ActorStatus>& answers) const;

  /// The endpoint's own answer to (status_atom).
  wire::ActorStatus own_status(int64_t mailbox, const status_http_stats& stats) const;

 private:
  int rank_;
  int world_size_;
  std::vector<caf::actor_addr> observed_;
  std::unordered_map<caf::actor_id, std::string> names_;
};

/// Binds cfg.host:cfg.port, logs the listening line and spawns the endpoint
/// actor, which serves HTTP on its own I/O thread. Returns the actor and the
/// bound port. Stop it with stop_status_endpoint before the actor system
/// shuts down.
caf::expected<std::pair<status_endpoint_actor, uint16_t>> spawn_status_endpoint(
    caf::actor_system& sys, status_endpoint_config cfg);

/// The endpoint of a process that hosts the coordination service and is no
/// worker (lifeboat-coordinator, lifeboat-launch): rank coordinator_status_rank,
/// `service` observed for its `workers` view, `watcher` (the preemption
/// watcher's actor) for its row, and `history` (spawn_job_history of the
/// service) for the history routes; `history` ends with the endpoint, and is
/// sent an exit when the endpoint cannot start.
caf::expected<std::pair<status_endpoint_actor, uint16_t>> spawn_coordinator_status_endpoint(
    caf::actor_system& sys, const caf::actor& service, const caf::actor& watcher,
    const caf::actor& history, int world_size, uint16_t port);

/// Sends the endpoint an exit message and drops the handle. Its HTTP thread
/// is joined when the actor terminates, before any other message is handled.
void stop_status_endpoint(status_endpoint_actor& endpoint);

}  // namespace lifeboat
