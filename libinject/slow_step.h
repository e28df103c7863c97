// The flight recorder's slow-step rule (pure, unit-tested): a step (one push/pop of the
// --slow-step NVTX range) is slow when it ran longer than the threshold, when one is set, or
// longer than `factor` times the median of the steps before it (the last kHistory of them).
// The first kMinHistory steps are never slow: they are warm-up (compilation, autotuning),
// and the median needs them. Every step, slow or not, then joins the history: a median
// moves little for a few slow steps, and a job that slows down for good stops being flagged
// once half its recent steps are that slow.
#ifndef WARPSCOPE_LIBINJECT_SLOW_STEP_H_
#define WARPSCOPE_LIBINJECT_SLOW_STEP_H_

#include <array>
#include <cstddef>
#include <cstdint>

namespace warpscope {

struct SlowStepOptions {
  uint64_t threshold_ns = 0;  // 0 = none
  double factor = 3;          // 0 = none
};

class SlowStepRule {
 public:
  static constexpr size_t kHistory = 32;
  static constexpr size_t kMinHistory = 5;

  explicit SlowStepRule(const SlowStepOptions& options) : options_(options) {}

  struct Verdict {
    bool slow = false;
    uint64_t median_ns = 0;  // of the steps before this one; 0 while fewer than kMinHistory
  };
  // One step ended after `duration_ns`.
  Verdict Add(uint64_t duration_ns);

  uint64_t steps() const { return steps_; }

 private:
  uint64_t Median() const;

  SlowStepOptions options_;
  std::array<uint64_t, kHistory> history_{};
  size_t filled_ = 0;
  size_t next_ = 0;
  uint64_t steps_ = 0;
};

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_SLOW_STEP_H_
