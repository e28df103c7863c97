// The union of time intervals (GPU work on one device): how long they cover, and the idle
// gaps between them. `summary` reports the totals, `advise` looks for the cause of each gap.
#ifndef WARPSCOPE_ANALYZERS_MODEL_INTERVAL_UNION_H_
#define WARPSCOPE_ANALYZERS_MODEL_INTERVAL_UNION_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace warpscope {

struct TimeInterval {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
};

// A stretch covered by no interval, between two covered ones.
struct IntervalGap {
  uint64_t begin_ns = 0;  // the end of `before`
  uint64_t end_ns = 0;    // the start of `after`
  size_t before = 0;      // index of the interval ending last before the gap (the first of equals)
  size_t after = 0;       // index of the first interval after the gap
  uint64_t length() const { return end_ns - begin_ns; }
};

struct IntervalUnion {
  uint64_t begin_ns = 0;    // the first interval's start
  uint64_t end_ns = 0;      // the latest end
  uint64_t covered_ns = 0;  // the length of the union
  std::vector<IntervalGap> gaps;
  uint64_t span_ns() const { return end_ns - begin_ns; }
};

// The union of `intervals`, which are sorted by begin_ns (all zero when there are none). Two
// intervals that touch (one ends where the next begins) leave no gap.
IntervalUnion UnionOfSorted(const std::vector<TimeInterval>& intervals);

// The same for `intervals` in any order.
IntervalUnion UnionOf(std::vector<TimeInterval> intervals);

// The stretches `intervals` (any order) cover, in time order: overlapping and touching ones
// merged into one.
std::vector<TimeInterval> MergedIntervals(std::vector<TimeInterval> intervals);

// How long two sets of merged intervals (MergedIntervals' output) overlap.
uint64_t OverlapOfMerged(const std::vector<TimeInterval>& a, const std::vector<TimeInterval>& b);

// The total length of merged intervals.
uint64_t LengthOfMerged(const std::vector<TimeInterval>& merged);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_INTERVAL_UNION_H_
