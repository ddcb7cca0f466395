#include "actors/coordination/progress_tracker.hpp"

#include <algorithm>

namespace lifeboat {

namespace {

// A rank needs this many samples before it can be called a straggler.
constexpr size_t min_straggler_samples = 4;

// The value at quantile q of `xs` (not empty), by the nearest lower rank.
double quantile(std::vector<double> xs, double q) {
  auto at = static_cast<size_t>(q * static_cast<double>(xs.size() - 1));
  std::nth_element(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(at), xs.end());
  return xs[at];
}

}  // namespace

progress_tracker::progress_tracker(int32_t world_size, int64_t hang_timeout_ms)
    : configured_timeout_ms_(hang_timeout_ms), ranks_(static_cast<size_t>(world_size)) {}

void progress_tracker::on_heartbeat(int32_t rank, int64_t step, int64_t blocked_ms, bool saving,
                                    int64_t now_ms, int64_t step_age_ms, bool in_step,
                                    bool finished) {
  if (rank < 0 || static_cast<size_t>(rank) >= ranks_.size()) return;
  auto& p = ranks_[static_cast<size_t>(rank)];
  // When the step moved, as the worker saw it; never before the last move
  // seen (clocks of two processes, and a worker's sampling, are not exact).
  auto moved_ms = std::max(now_ms - std::max<int64_t>(step_age_ms, 0), p.advanced_ms);
  bool was_saving = p.saving;
  p.saving = saving;
  p.in_step = in_step;
  p.finished = finished;
  if (!p.followed || step < p.step) {
    p = rank_progress{true, step,    now_ms,  blocked_ms, 0,
                      0,    saving,  false,   {},         p.straggler_reported,
                      step, in_step, finished};
    return;
  }
  // A step's age counts from the end of the last save at it, if any: the
  // save's time is not the training loop's.
  step_age_ms = std::max<int64_t>(step_age_ms, 0);
  if (step != p.step) p.age_at_save_end_ms = 0;
  if (saving || was_saving) p.age_at_save_end_ms = step_age_ms;
  p.step_age_ms = std::max<int64_t>(step_age_ms - p.age_at_save_end_ms, 0);
  if (step == p.step && !saving && !was_saving) return;
  // A save, and the steps that end in one, are neither step time nor a
  // hang: the clock starts again when it is over.
  if (saving || was_saving) {
    p.step = step;
    p.advanced_ms = now_ms;
    p.blocked_ms = blocked_ms;
    p.sample_from_here = false;
    return;
  }
  if (p.sample_from_here) {
    auto busy_ms = static_cast<double>((moved_ms - p.advanced_ms) - (blocked_ms - p.blocked_ms));
    p.samples_ms.push_back(std::max(0.0, busy_ms) / static_cast<double>(step - p.step));
    if (p.samples_ms.size() > window_samples) p.samples_ms.pop_front();
  }
  p.step = step;
  p.advanced_ms = moved_ms;
  p.blocked_ms = blocked_ms;
  p.sample_from_here = step >= warmup_steps;
}

void progress_tracker::forget(int32_t rank) {
  if (rank >= 0 && static_cast<size_t>(rank) < ranks_.size())
    ranks_[static_cast<size_t>(rank)] = rank_progress{};
}

void progress_tracker::reset() {
  for (auto& p : ranks_) p = rank_progress{};
}

std::optional<progress_tracker::hang> progress_tracker::find_hang(int32_t rank) const {
  if (configured_timeout_ms_ == 0 || rank < 0 || static_cast<size_t>(rank) >= ranks_.size())
    return std::nullopt;
  auto& p = ranks_[static_cast<size_t>(rank)];
  // This runs at every heartbeat, and the adaptive timeout is a pass over
  // every rank's step times: a step younger than any timeout can be needs
  // neither it nor the pass over the peers' steps below.
  auto at_least = configured_timeout_ms_ == adaptive_hang_timeout ? adaptive_hang_floor_ms
                                                                  : configured_timeout_ms_;
  if (!p.followed || p.saving || p.step_age_ms < at_least) return std::nullopt;
  auto timeout = hang_timeout_ms();
  if (p.step_age_ms < timeout) return std::nullopt;
  int64_t peers_step = -1;
  for (size_t q = 0; q < ranks_.size(); ++q)
    if (q != static_cast<size_t>(rank) && ranks_[q].followed)
      peers_step = std::max(peers_step, ranks_[q].step);
  if (p.step >= peers_step) return std::nullopt;
  return hang{rank, p.step, p.step_age_ms, peers_step};
}

std::optional<progress_tracker::job_hang> progress_tracker::find_job_hang(int32_t rank) const {
  if (configured_timeout_ms_ == 0 || rank < 0 || static_cast<size_t>(rank) >= ranks_.size())
    return std::nullopt;
  // Every heartbeat of a stuck job gets here: its own rank first, which
  // ends the pass for all but the rank whose step is old enough (the
  // adaptive timeout's pass over every rank's step times waits for that).
  bool adaptive = configured_timeout_ms_ == adaptive_hang_timeout;
  auto timeout = adaptive ? adaptive_hang_floor_ms : configured_timeout_ms_;
  auto stuck = [&](const rank_progress& p) {
    return p.followed && !p.saving && p.step > p.first_step && p.step_age_ms >= timeout;
  };
  auto& own = ranks_[static_cast<size_t>(rank)];
  if (!stuck(own)) return std::nullopt;
  if (adaptive) {
    timeout = hang_timeout_ms();
    if (!stuck(own)) return std::nullopt;
  }
  job_hang h{own.step, own.step_age_ms, {}, {}};
  bool one_in_step = false;
  for (size_t q = 0; q < ranks_.size(); ++q) {
    auto& p = ranks_[q];
    if (!stuck(p) || p.step != own.step) return std::nullopt;
    h.stuck_ms = std::min(h.stuck_ms, p.step_age_ms);
    if (p.in_step) {
      one_in_step = true;
      continue;
    }
    h.outside.push_back(static_cast<int32_t>(q));
    if (p.finished) h.finished.push_back(static_cast<int32_t>(q));
  }
  if (!one_in_step) return std::nullopt;
  // Under the adaptive timeout, only a rank whose loop ended tells a hang
  // from a long step of every rank: the others wait in a step it never runs.
  if (adaptive && h.finished.empty()) return std::nullopt;
  return h;
}

int64_t progress_tracker::hang_timeout_ms() const {
  if (configured_timeout_ms_ != adaptive_hang_timeout) return configured_timeout_ms_;
  auto adaptive = static_cast<int64_t>(adaptive_hang_factor * cluster_median_ms());
  return std::max(adaptive_hang_floor_ms, adaptive);
}

double progress_tracker::median_ms(const rank_progress& p) const {
  if (p.samples_ms.empty()) return 0;
  return quantile({p.samples_ms.begin(), p.samples_ms.end()}, 0.5);
}

double progress_tracker::cluster_median_ms() const {
  std::vector<double> medians;
  for (auto& p : ranks_)
    if (!p.samples_ms.empty()) medians.push_back(median_ms(p));
  if (medians.empty()) return 0;
  return quantile(std::move(medians), 0.5);
}

progress_tracker::step_stats progress_tracker::stats(int32_t rank, double cluster_median_ms) const {
  if (rank < 0 || static_cast<size_t>(rank) >= ranks_.size()) return {};
  auto& p = ranks_[static_cast<size_t>(rank)];
  if (p.samples_ms.empty()) return {};
  step_stats out;
  out.median_seconds = median_ms(p) / 1000.0;
  out.p99_seconds = quantile({p.samples_ms.begin(), p.samples_ms.end()}, 0.99) / 1000.0;
  auto reference = cluster_median_ms / 1000.0;
  out.straggler = p.samples_ms.size() >= min_straggler_samples && reference > 0 &&
                  out.median_seconds > straggler_factor * reference;
  return out;
}

std::vector<int32_t> progress_tracker::take_new_stragglers() {
  std::vector<int32_t> out;
  auto reference = cluster_median_ms();
  for (size_t r = 0; r < ranks_.size(); ++r) {
    bool now = stats(static_cast<int32_t>(r), reference).straggler;
    if (now && !ranks_[r].straggler_reported) out.push_back(static_cast<int32_t>(r));
    ranks_[r].straggler_reported = now;
  }
  return out;
}

}  // namespace lifeboat
