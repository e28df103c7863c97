// Whether device memory keeps growing as a program makes progress (docs/memory.md, "Leaks"):
// the memory in use at evenly spaced points of progress (the starts of the steady steps, or,
// in a trace without steps, the ends of evenly spaced kernels) judged by a robust slope.
//
// Growth may begin anywhere: a cache that fills from step 200, an evaluation that keeps its
// outputs. The judgement fits "flat, then a straight rise" at every onset and keeps the onset
// that fits best (least absolute deviation), then gives the rise's Theil-Sen slope with Sen's
// 95% interval. A leak is a rise whose interval lies above zero and that gained at least
// kLeakMinimumBytes.
//
// Cost: at most kGrowthPoints points are judged (longer series are thinned evenly, the slope
// scaled back to one point of the input), so time and memory do not grow with the steps.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_MEMORY_GROWTH_H_
#define WARPSCOPE_ANALYZERS_MEASURES_MEMORY_GROWTH_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "analyzers/measures/memory_timeline.h"

namespace warpscope {

inline constexpr uint64_t kLeakMinimumBytes = 1 << 20;
inline constexpr size_t kGrowthPoints = 160;
// An onset after the first point is kept only when it fits this much better (its summed
// absolute deviation at most this share of the straight rise from the first point's).
inline constexpr double kOnsetBetterFit = 0.7;

struct GrowthJudgement {
  std::optional<Slope> slope;  // bytes per input point, over the rise
  size_t onset = 0;            // the input point where the rise begins
  uint64_t gained = 0;         // the last point minus the onset's, when it grew
  bool leak = false;
};

// `values`: memory in use at evenly spaced points of progress, warm-up already left out.
GrowthJudgement JudgeGrowth(const std::vector<uint64_t>& values);

// Instants of progress through a trace without steps: from `kernel_ends` (kernel end times,
// any order; every kernel, or every stride-th one of a KernelEndSample), the ends of evenly
// spaced ones in time order, after the first `skip_share` of them (warm-up: the first step's
// allocations, compilation), at most `count` and at least 3 apart; empty when that leaves
// fewer than kMinimumProgressPoints. `per_point`: the entries of `kernel_ends` between two.
inline constexpr size_t kMinimumProgressPoints = 8;
inline constexpr double kKernelWarmupShare = 0.1;
// Points over the kernels of a trace without steps: few enough that each spans an iteration of
// a short program, so that the least in use between two holds what the program keeps.
inline constexpr size_t kKernelProgressPoints = 40;
// A rise over fewer kernels than this (after the warm-up share) is not called a leak: so little
// work is mostly start-up (a rank killed during its first steps, a short script), where memory
// rises as the program first takes what it then reuses.
inline constexpr double kLeakMinimumKernels = 1000;
std::vector<uint64_t> KernelProgressInstants(std::vector<uint64_t> kernel_ends, size_t count,
                                             double skip_share, double* per_point);

// Every stride-th kernel end in the order given, at most 2 * cap of them: when full, every
// other one is dropped and the stride doubles. Memory stays bounded however many kernels.
class KernelEndSample {
 public:
  explicit KernelEndSample(size_t cap = 4096) : cap_(cap) {}
  void Add(uint64_t end_ns);
  const std::vector<uint64_t>& ends() const { return ends_; }
  uint64_t stride() const { return stride_; }

 private:
  size_t cap_;
  uint64_t stride_ = 1, seen_ = 0;
  std::vector<uint64_t> ends_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_MEMORY_GROWTH_H_
