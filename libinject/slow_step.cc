// The slow-step rule (see slow_step.h).
#include "libinject/slow_step.h"

#include <algorithm>

namespace warpscope {

uint64_t SlowStepRule::Median() const {
  if (filled_ < kMinHistory) return 0;
  std::array<uint64_t, kHistory> sorted = history_;
  const auto begin = sorted.begin();
  const auto end = begin + static_cast<std::ptrdiff_t>(filled_);
  std::sort(begin, end);
  // Even counts take the mean of the two middle steps.
  return filled_ % 2 == 1 ? sorted[filled_ / 2]
                          : sorted[filled_ / 2 - 1] / 2 + sorted[filled_ / 2] / 2 +
                                (sorted[filled_ / 2 - 1] % 2 + sorted[filled_ / 2] % 2) / 2;
}

SlowStepRule::Verdict SlowStepRule::Add(uint64_t duration_ns) {
  Verdict v;
  v.median_ns = Median();
  // The first steps are warm-up (compilation, autotuning, caches filling): slow by nature.
  if (options_.threshold_ns != 0 && filled_ >= kMinHistory && duration_ns > options_.threshold_ns) {
    v.slow = true;
  }
  if (options_.factor > 0 && v.median_ns != 0 &&
      static_cast<double>(duration_ns) > options_.factor * static_cast<double>(v.median_ns)) {
    v.slow = true;
  }
  history_[next_] = duration_ns;
  next_ = (next_ + 1) % kHistory;
  filled_ = std::min(filled_ + 1, kHistory);
  ++steps_;
  return v;
}

}  // namespace warpscope
