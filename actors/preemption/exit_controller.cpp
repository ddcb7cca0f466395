#include "actors/preemption/exit_controller.hpp"

#include <cstdio>
#include <cstdlib>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_client.hpp"
#include "actors/preemption/decision_recorder.hpp"
#include "actors/preemption/protocol.hpp"
#include "messages/log.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "platform/child_processes.hpp"

namespace lifeboat {

const char* exit_controller_state::name = "exit_controller";

void exit_process(int code) {
  // Python's own exit would end a DataLoader's or a pool's workers; _Exit
  // does not, and they would hold this worker's sockets (child_processes.hpp).
  if (auto ended = end_child_processes())
    log(log_level::info, "exit_controller", "ended ", ended, " child process(es) of this worker");
  std::fflush(nullptr);
  std::_Exit(code);
}

exit_controller_actor::behavior_type exit_controller(
    exit_controller_actor::stateful_pointer<exit_controller_state> self, exit_controller_config cfg,
    std::shared_ptr<step_gate> gate) {
  self->state.gate = std::move(gate);
  self->state.restart_code = cfg.restart_code;
  return {
      [=](const peer_failure& failure) {
        auto& st = self->state;
        if (!st.reason.empty()) return;
        st.failed = true;
        // Rank -1 is the coordination service, whose message names it.
        st.reason = failure.rank < 0
                        ? failure.message
                        : "rank " + std::to_string(failure.rank) +
                              (failure.lost ? " lost: " : " failed: ") + failure.message;
        log(log_level::error, "exit_controller", st.reason);
        // This rank's own training thread is stuck (a hang of rank -1 is the
        // whole job's: every rank's is): waiting for it to raise is
        // pointless, and where it is stuck is what a person needs. Its stack
        // is written before the gate fails: a thread the failure releases
        // (from a failed barrier) would be on its way out when it is taken.
        bool hung = (failure.rank == cfg.rank || failure.rank < 0) &&
                    failure.code == static_cast<int32_t>(errc::hung);
        if (hung) {
          log(log_level::error, "exit_controller", failure.rank < 0 ? "the job" : "this rank",
              " is hung (", failure.message, "); the stack of this rank's training thread follows");
          if (cfg.dump_stacks) cfg.dump_stacks();
          st.stacks_written = true;
        }
        st.gate->fail(failure.rank, failure.message, failure.lost);
        self->delayed_send(self, hung ? cfg.hung_exit_delay : cfg.failure_exit_bound,
                           watchdog_atom::value, failure_exit_code);
      },
      [=](committed_atom, const wire::SaveCommitted& committed) {
        auto& st = self->state;
        if (!committed.final_save() || !st.reason.empty()) return;
        st.reason = "checkpoint at step " + std::to_string(committed.step()) +
                    " committed; exiting with restart code " + std::to_string(st.restart_code);
        log(log_level::info, "exit_controller", st.reason);
        decision_recorder::process().on_exit(committed.step());
        st.committed = true;
        st.gate->allow_exit(st.restart_code);
        self->delayed_send(self, cfg.commit_exit_bound, watchdog_atom::value, st.restart_code);
      },
      [=](exit_now_atom, bool failed) {
        // The restart code only after the commit, and never when the trainer
        // itself says it failed (its own failure may not have come back yet).
        exit_process(!failed && self->state.committed ? self->state.restart_code
                                                      : failure_exit_code);
      },
      [=](watchdog_atom, int code) {
        log(log_level::error, "exit_controller", "the trainer did not exit in time (",
            self->state.reason, "); exiting with code ", code);
        // A trainer that neither raised nor exited is stuck outside lifeboat
        // (a DataLoader's worker that never answers, a collective without a
        // timeout): where, is what a person needs. A hung rank's stack is
        // written already.
        if (!self->state.stacks_written && cfg.dump_stacks) {
          log(log_level::error, "exit_controller",
              "the stack of this rank's training thread follows");
          cfg.dump_stacks();
        }
        exit_process(code);
      },
      [=](status_atom) -> wire::ActorStatus {
        wire::ActorStatus st;
        st.set_name(exit_controller_state::name);
        st.set_state(self->state.reason.empty() ? "waiting" : "exiting: " + self->state.reason);
        st.set_mailbox(static_cast<int64_t>(self->mailbox().size()));
        (*st.mutable_metrics())["errors_total"] = self->state.failed ? 1.0 : 0.0;
        return st;
      },
  };
}

}  // namespace lifeboat
