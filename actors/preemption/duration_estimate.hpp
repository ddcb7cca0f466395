#pragma once

#include <cstddef>
#include <deque>

namespace lifeboat {

/// A robust estimate of a recurring duration (a training step, a save, an
/// agreement round) from its recent samples, for the grace-period schedule.
///
/// One sample must not move the schedule much: on a loaded host a step may
/// wait for a CPU or a save for the disk once, and a schedule taken from the
/// latest sample (or the largest) then saves far too early. So the estimate is
/// the median of the last `capacity` samples, and a sample is bounded to
/// `outlier_bound` times the estimate before it (an outlier still counts, but
/// only as that much). A lasting change still takes over: each sample at the
/// bound raises the median, so a few samples reach any new level. Samples up
/// to `never_bounded_seconds` are taken as they are: so short a duration
/// cannot make a save early, and an estimate near 0 must not pin later ones.
///
/// A plain value owned by its user (step_resolver_state). Thread-safety: not
/// thread-safe.
class duration_estimate {
 public:
  static constexpr size_t default_capacity = 7;
  static constexpr double outlier_bound = 4.0;
  static constexpr double never_bounded_seconds = 0.05;

  explicit duration_estimate(size_t capacity = default_capacity) : capacity_(capacity) {}

  /// Adds one measured duration (seconds); negative ones are ignored.
  void add(double seconds);

  /// The median of the recent samples (the mean of the middle two for an even
  /// count); 0 without any.
  double seconds() const;

  bool empty() const { return samples_.empty(); }

 private:
  size_t capacity_;
  std::deque<double> samples_;
};

}  // namespace lifeboat
