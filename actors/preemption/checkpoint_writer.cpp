#include "actors/preemption/checkpoint_writer.hpp"

#include <chrono>
#include <functional>
#include <string>
#include <utility>

#include <caf/send.hpp>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_atoms.hpp"
#include "actors/coordination/coordination_client.hpp"
#include "actors/coordination/coordination_events.hpp"
#include "actors/preemption/checkpoint_record.hpp"
#include "actors/preemption/decision_recorder.hpp"
#include "actors/preemption/protocol.hpp"
#include "checkpoint/store.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "messages/preemption.pb.h"
#include "messages/wire.hpp"

namespace lifeboat {

namespace {

using writer_pointer = checkpoint_writer_actor::stateful_pointer<checkpoint_writer_state>;

// The service answers a record, or the erasure of the one before it, within this.
constexpr auto record_timeout = std::chrono::seconds{5};

// Inserts `info` as this worker's record of its step, then runs `then`. A
// record of that step already there (a save at the restored step) is no
// failure: the insert-if-absent's refusal says so. A failure is logged and
// changes nothing else, but the record may still land: its key is kept to
// erase with the next record's.
void insert_record(writer_pointer self, const wire::CheckpointInfo& info,
                   std::function<void()> then) {
  auto& st = self->state;
  auto key = checkpoint_record_key(info.step(), st.client->rank());
  self->request(st.client->agent(), record_timeout, insert_atom::value, key,
                info.SerializeAsString())
      .then(then, [self, then, key](caf::error& err) {
        if (err == make_error(errc::already_exists)) return then();
        self->state.records.may_be_there(key);
        log(log_level::warning, "checkpoint_writer", "cannot record ", key,
            " for the coordinator's status: ", describe(err));
      });
}

// Records `info` (this worker's shard of a committed checkpoint) for a
// coordinator's status, then drops this worker's other records, so that
// the service holds one record per worker however long the job saves. The
// actor goes on meanwhile.
void record_checkpoint(writer_pointer self, const wire::CheckpointInfo& info) {
  auto& st = self->state;
  if (info.path().empty()) return;
  st.recorded = info;
  auto key = checkpoint_record_key(info.step(), st.client->rank());
  insert_record(self, info, [self, key] {
    for (auto& other : self->state.records.inserted(key))
      self->request(self->state.client->agent(), record_timeout, erase_prefix_atom::value, other)
          .then([] {},
                [self, other](caf::error& err) {
                  self->state.records.may_be_there(other);
                  log(log_level::warning, "checkpoint_writer", "cannot drop the record ", other,
                      ": ", describe(err));
                });
  });
}

// The checkpoint directory now holds the recorded checkpoint of `step` too:
// its record, unless a later save's replaced it, is written again with that
// tier. The service inserts only what is absent, so the record is erased
// first (its key is no prefix of another's: both numbers have fixed widths);
// the agent sends both in order.
void add_directory_to_record(writer_pointer self, int64_t step) {
  auto& st = self->state;
  auto record = record_with_tier(st.recorded, step, checkpoint::tier_directory);
  if (!record) return;
  st.recorded = *record;
  auto key = checkpoint_record_key(step, st.client->rank());
  self->request(st.client->agent(), record_timeout, erase_prefix_atom::value, key)
      .then([self, record = *record] { insert_record(self, record, [] {}); },
            [key](caf::error& err) {
              log(log_level::warning, "checkpoint_writer", "cannot replace the record ", key, ": ",
                  describe(err));
            });
}

}  // namespace

const char* checkpoint_writer_state::name = "checkpoint_writer";

std::string save_failure_text(int64_t step, const std::string& error) {
  return "checkpoint save at step " + std::to_string(step) + " failed: " + error;
}

checkpoint_writer_actor::behavior_type checkpoint_writer(
    checkpoint_writer_actor::stateful_pointer<checkpoint_writer_state> self,
    std::shared_ptr<coordination_client> client, caf::actor resolver, bool commit_rank,
    wire::CheckpointInfo restored, bool restored_in_directory) {
  self->state.client = std::move(client);
  self->state.resolver = std::move(resolver);
  self->state.commit_rank = commit_rank;
  self->state.restored = std::move(restored);
  // The checkpoint this worker went on from is the job's last until it
  // saves. Its seconds here are the restore's, not its save's, which this
  // generation never saw: none are recorded. The tier it was read from
  // holds it, and so does the directory where it is committed there too.
  auto went_on_from = self->state.restored;
  went_on_from.set_seconds(0);
  for (auto& tier : *went_on_from.mutable_tiers()) tier.set_seconds(0);
  if (restored_in_directory)
    if (auto both = record_with_tier(went_on_from, went_on_from.step(), checkpoint::tier_directory))
      went_on_from = std::move(*both);
  record_checkpoint(self, went_on_from);
  return {
      [=](saving_atom, int64_t step) {
        self->state.saving_step = step;
        decision_recorder::process().on_snapshot(step);
        // A typed actor sends to the untyped resolver (a broker) anonymously;
        // the resolver never answers these.
        caf::anon_send(self->state.resolver, saving_atom::value, step);
      },
      [=](saved_atom, int64_t step, bool final_save, const wire::CheckpointInfo& info,
          double seconds) {
        auto& st = self->state;
        st.saving_step = -1;
        ++st.saves;
        st.seconds_total += seconds;
        st.last = info;
        record_checkpoint(self, info);
        decision_recorder::process().on_shard_durable(step, seconds, info.bytes());
        caf::anon_send(st.resolver, ckpt_time_atom::value, seconds);
        if (!st.commit_rank) return;
        // The commit rank's save returns only after the manifest is durable
        // and every rank passed the barrier: the save is committed.
        wire::ProtocolMessage msg;
        msg.mutable_committed()->set_step(step);
        msg.mutable_committed()->set_final_save(final_save);
        st.client->send(every_rank, protocol_channel, msg.SerializeAsString());
      },
      [=](save_failed_atom, int64_t step, const std::string& error) {
        auto& st = self->state;
        st.saving_step = -1;
        ++st.failures;
        auto text = save_failure_text(step, error);
        log(log_level::error, "checkpoint_writer", text);
        st.client->report_error(static_cast<int32_t>(errc::io_error), text);
      },
      [=](persisted_atom, int64_t step) { add_directory_to_record(self, step); },
      [=](committed_atom, const wire::SaveCommitted& committed) {
        log(log_level::info, "checkpoint_writer", "checkpoint at step ", committed.step(),
            " committed", committed.final_save() ? " (final)" : "");
      },
      [=](status_atom) -> wire::ActorStatus {
        auto& st = self->state;
        wire::ActorStatus out;
        out.set_name(checkpoint_writer_state::name);
        out.set_state(st.saving_step >= 0 ? "saving step " + std::to_string(st.saving_step)
                                          : "idle");
        out.set_mailbox(static_cast<int64_t>(self->mailbox().size()));
        *out.mutable_last_checkpoint() = st.last;
        *out.mutable_restored() = st.restored;
        (*out.mutable_metrics())["saves_total"] = static_cast<double>(st.saves);
        (*out.mutable_metrics())["save_failures_total"] = static_cast<double>(st.failures);
        (*out.mutable_metrics())["save_seconds_total"] = st.seconds_total;
        (*out.mutable_metrics())["last_checkpoint_bytes"] = static_cast<double>(st.last.bytes());
        return out;
      },
  };
}

}  // namespace lifeboat
