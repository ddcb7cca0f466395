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

/// Periodic self-messages.
using tick_atom = caf::atom_constant<caf::atom("tick")>;

}  // namespace lifeboat
