#include "actors/preemption/checkpoint_record.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

namespace lifeboat {

namespace {

// Digits of the padded step (int64's largest has 19) and rank (int32's, 10).
constexpr int step_digits = 19;
constexpr int rank_digits = 10;

// The tier named `name` in `info`, if it holds the checkpoint.
const wire::TierTime* find_tier(const wire::CheckpointInfo& info, const std::string& name) {
  for (const auto& tier : info.tiers())
    if (tier.name() == name) return &tier;
  return nullptr;
}

}  // namespace

std::string checkpoint_record_key(int64_t step, int32_t rank) {
  char buf[step_digits + rank_digits + 2];
  std::snprintf(buf, sizeof(buf), "%0*lld/%0*d", step_digits, static_cast<long long>(step),
                rank_digits, static_cast<int>(rank));
  return checkpoint_key_prefix + std::string{buf};
}

std::optional<wire::CheckpointInfo> record_with_tier(const wire::CheckpointInfo& record,
                                                     int64_t step, const std::string& tier) {
  if (record.path().empty() || record.step() != step || find_tier(record, tier))
    return std::nullopt;
  auto out = record;
  out.add_tiers()->set_name(tier);
  return out;
}

wire::CheckpointInfo job_checkpoint(const std::map<std::string, std::string>& records) {
  // The keys sort by step, then by rank: the last readable record names the
  // highest step, and its step's records lie just before it.
  std::vector<wire::CheckpointInfo> last_step;
  for (auto i = records.rbegin(); i != records.rend(); ++i) {
    wire::CheckpointInfo info;
    if (!info.ParseFromString(i->second) || info.path().empty()) continue;
    if (!last_step.empty() && info.step() != last_step.front().step()) break;
    last_step.push_back(std::move(info));
  }
  wire::CheckpointInfo out;
  if (last_step.empty()) return out;
  // Walked from the highest rank down: the lowest rank's record is last.
  const auto& lowest = last_step.back();
  out.set_step(lowest.step());
  out.set_path(lowest.path());
  for (const auto& info : last_step) {
    out.set_bytes(out.bytes() + info.bytes());
    out.set_seconds(std::max(out.seconds(), info.seconds()));
  }
  for (const auto& tier : lowest.tiers()) {
    std::optional<double> slowest = tier.seconds();
    for (const auto& info : last_step) {
      const auto* held = find_tier(info, tier.name());
      if (held == nullptr) {
        slowest.reset();
        break;
      }
      slowest = std::max(*slowest, held->seconds());
    }
    if (!slowest) continue;
    auto* row = out.add_tiers();
    row->set_name(tier.name());
    row->set_seconds(*slowest);
  }
  return out;
}

std::vector<std::string> record_keys::inserted(const std::string& key) {
  if (!current_.empty()) stale_.insert(current_);
  stale_.erase(key);
  current_ = key;
  std::vector<std::string> out{stale_.begin(), stale_.end()};
  stale_.clear();
  return out;
}

void record_keys::may_be_there(const std::string& key) {
  if (key != current_) stale_.insert(key);
}

}  // namespace lifeboat
