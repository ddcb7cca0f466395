#include "actors/preemption/duration_estimate.hpp"

#include <algorithm>
#include <vector>

namespace lifeboat {

void duration_estimate::add(double seconds) {
  if (seconds < 0) return;
  if (!samples_.empty())
    seconds = std::min(seconds, std::max(never_bounded_seconds, outlier_bound * this->seconds()));
  samples_.push_back(seconds);
  if (samples_.size() > capacity_) samples_.pop_front();
}

double duration_estimate::seconds() const {
  if (samples_.empty()) return 0;
  std::vector<double> sorted(samples_.begin(), samples_.end());
  std::sort(sorted.begin(), sorted.end());
  auto mid = sorted.size() / 2;
  return sorted.size() % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

}  // namespace lifeboat
