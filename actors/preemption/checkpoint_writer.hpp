#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/preemption/checkpoint_record.hpp"
#include "actors/preemption/interfaces.hpp"
#include "messages/status.pb.h"

namespace lifeboat {

class coordination_client;

/// Follows this worker's saves: the trainer snapshots and hands the bytes to
/// the checkpoint store's I/O thread (checkpoint::async_saver), which writes
/// the shard, meets the other ranks at the checkpoint-ready barrier and
/// commits. The writer hears how it ended, keeps the last checkpoint for the
/// status endpoint, feeds the measured save time to the step resolver, and on
/// the commit rank tells every worker that the save is committed (which is
/// what lets the exit controllers exit). A failed save is reported to every
/// worker as this worker's error. It records each checkpoint this worker
/// holds committed (the one restored at start, then each save) in the
/// coordination service for a coordinator's status (checkpoint_record.hpp),
/// with the tiers that hold it, asynchronously: a record that fails is
/// logged, the save stands. Its interface is checkpoint_writer_actor
/// (interfaces.hpp):
///   (saving_atom, int64_t step)                                the trainer began a save
///   (saved_atom, int64_t step, bool final, CheckpointInfo, double seconds)  durable / committed
///   (save_failed_atom, int64_t step, std::string error)
///   (persisted_atom, int64_t step)    the restored checkpoint reached the directory
///   (committed_atom, wire::SaveCommitted)                      from the cluster watcher
///   (status_atom) -> wire::ActorStatus
///
/// Lifetime: it shares the client with the runtime, so the client stays
/// while a commit is still in its mailbox. Thread-safety: an actor.
struct checkpoint_writer_state {
  static const char* name;
  std::shared_ptr<coordination_client> client;
  caf::actor resolver;
  bool commit_rank = false;
  int64_t saving_step = -1;
  wire::CheckpointInfo last;
  wire::CheckpointInfo restored;  // at start; empty for a fresh start
  wire::CheckpointInfo recorded;  // what this worker's record holds, or is about to
  record_keys records;            // of this worker's records in the service
  int64_t saves = 0;
  int64_t failures = 0;
  double seconds_total = 0;
};

/// The error of a failed save, as the writer logs and reports it (and the
/// trainer raises it where the save failed on its own thread).
std::string save_failure_text(int64_t step, const std::string& error);

/// `restored`: the checkpoint this worker went on from (empty: a fresh
/// start), its `tiers` the one it read; `restored_in_directory`: the
/// checkpoint directory holds it committed as well.
checkpoint_writer_actor::behavior_type checkpoint_writer(
    checkpoint_writer_actor::stateful_pointer<checkpoint_writer_state> self,
    std::shared_ptr<coordination_client> client, caf::actor resolver, bool commit_rank,
    wire::CheckpointInfo restored, bool restored_in_directory);

}  // namespace lifeboat
