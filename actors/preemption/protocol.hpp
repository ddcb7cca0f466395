#pragma once

#include <caf/atom.hpp>

namespace lifeboat {

// Names and atoms of the preemption protocol between the worker actors.

/// The coordination-service channel that carries wire::ProtocolMessage.
constexpr const char* protocol_channel = "lifeboat/protocol";

/// KV key prefix under which every worker records the first notice it got
/// ("lifeboat/notice/<rank>"); the preemption watcher reads it.
constexpr const char* notice_key_prefix = "lifeboat/notice/";

/// (notice_atom, wire::Notice): a watcher tells the step resolver of a notice.
using notice_atom = caf::atom_constant<caf::atom("notice")>;

/// (save_atom, step, final_save, snapshot): the trainer hands a save to the writer.
using save_atom = caf::atom_constant<caf::atom("save")>;

/// (saving_atom, step): the trainer began the save of `step`.
using saving_atom = caf::atom_constant<caf::atom("saving")>;

/// (committed_atom, wire::SaveCommitted): the save is committed cluster-wide.
using committed_atom = caf::atom_constant<caf::atom("committed")>;

/// (checkpoint_seconds_atom, seconds): how long this worker's last save took.
using ckpt_time_atom = caf::atom_constant<caf::atom("ckpt_time")>;

/// (saved_atom, step, final_save, wire::CheckpointInfo, seconds): a save is
/// durable (and, on the commit rank, committed); to the checkpoint writer.
using saved_atom = caf::atom_constant<caf::atom("saved")>;

/// (persisted_atom, step): the checkpoint of `step` this worker went on from,
/// which the checkpoint directory lacked, reached it in the background; to
/// the checkpoint writer.
using persisted_atom = caf::atom_constant<caf::atom("persisted")>;

/// (save_failed_atom, step, error): a save failed; to the checkpoint writer.
using save_failed_atom = caf::atom_constant<caf::atom("savefailed")>;

/// (exit_now_atom, bool failed): the training thread is done (it left the
/// cluster) and asks the exit controller to end the process now; `failed`:
/// it ends after a failure, or the final commit never came.
using exit_now_atom = caf::atom_constant<caf::atom("exitnow")>;

/// (watchdog_atom, code): the exit controller's own timer: the trainer did
/// not ask to exit in time, so the process ends with `code`.
using watchdog_atom = caf::atom_constant<caf::atom("watchdog")>;

/// (acknowledge_atom) -> void: asks every source that gave a notice to
/// acknowledge it and answers when all have.
using acknowledge_atom = caf::atom_constant<caf::atom("ack")>;

/// (acknowledged_atom, std::string poller): a poller's source acknowledged.
using acknowledged_atom = caf::atom_constant<caf::atom("acked")>;

/// Periodic self-messages.
using tick_atom = caf::atom_constant<caf::atom("tick")>;

}  // namespace lifeboat
