#pragma once

#include <atomic>
#include <vector>

#include <caf/actor.hpp>

#include "actors/preemption/preemption_watcher.hpp"
#include "apps/launch_options.hpp"
#include "apps/node_link.hpp"
#include "apps/worker_group.hpp"

namespace lifeboat::apps {

/// What both kinds of launcher of a multi-node job work with.
struct node_context {
  const launch_options& opts;
  worker_group& group;
  /// The signal this launcher forwarded to its workers (0: none yet).
  const std::atomic<int>& received_signal;
  /// When it first forwarded one (forwarded_now_ns; 0: none yet).
  const std::atomic<int64_t>& forwarded_at_ns;
};

/// Node 0's launcher: decides every generation for the whole job. It tells
/// the others ("start G"), gathers every worker's exit ("exit ..."), and once
/// every node reaped its workers ("done G SIGNAL") decides as a single-node
/// launcher would, for all the job's workers, and sends its lines ("say ...")
/// and the next step ("start G+1" or "exit CODE"). A node that forwarded a
/// signal to its workers says so ("forwarded SIGNAL"); when none of the
/// job's workers heeded it (unheeded_signal_check) node 0 tells that node to
/// kill them ("unheeded"). `links` by node rank.
/// Returns the exit code every launcher ends with.
int run_node_zero(const node_context& ctx, std::vector<link_ptr> links, caf::actor service,
                  const preemption_watcher& watcher);

/// Another node's launcher: follows node 0's decisions with its own workers;
/// ends them and returns 3 when it loses node 0's launcher.
int run_other_node(const node_context& ctx, node_link& link);

}  // namespace lifeboat::apps
