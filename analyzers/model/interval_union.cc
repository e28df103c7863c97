// The union of time intervals and the gaps between them (interval_union.h).
#include "analyzers/model/interval_union.h"

#include <algorithm>
#include <utility>

namespace warpscope {

IntervalUnion UnionOfSorted(const std::vector<TimeInterval>& intervals) {
  IntervalUnion u;
  if (intervals.empty()) return u;
  size_t last = 0;  // the interval ending last so far
  uint64_t stretch_begin = intervals[0].begin_ns;
  u.begin_ns = stretch_begin;
  for (size_t i = 1; i < intervals.size(); ++i) {
    const TimeInterval& next = intervals[i];
    const uint64_t reach = intervals[last].end_ns;
    if (next.begin_ns > reach) {
      u.covered_ns += reach - stretch_begin;
      u.gaps.push_back({reach, next.begin_ns, last, i});
      stretch_begin = next.begin_ns;
      last = i;
    } else if (next.end_ns > reach) {
      last = i;
    }
  }
  u.end_ns = intervals[last].end_ns;
  u.covered_ns += u.end_ns - stretch_begin;
  return u;
}

IntervalUnion UnionOf(std::vector<TimeInterval> intervals) {
  // Most callers pass work in start order already (advise's per-device tables).
  auto by_begin = [](const TimeInterval& a, const TimeInterval& b) {
    return a.begin_ns < b.begin_ns;
  };
  if (!std::is_sorted(intervals.begin(), intervals.end(), by_begin)) {
    std::sort(intervals.begin(), intervals.end(), by_begin);
  }
  return UnionOfSorted(intervals);
}

std::vector<TimeInterval> MergedIntervals(std::vector<TimeInterval> intervals) {
  if (intervals.empty()) return intervals;
  const IntervalUnion u = UnionOf(std::move(intervals));
  std::vector<TimeInterval> merged;
  merged.reserve(u.gaps.size() + 1);
  uint64_t begin = u.begin_ns;
  for (const IntervalGap& gap : u.gaps) {
    merged.push_back({begin, gap.begin_ns});
    begin = gap.end_ns;
  }
  merged.push_back({begin, u.end_ns});
  return merged;
}

uint64_t OverlapOfMerged(const std::vector<TimeInterval>& a, const std::vector<TimeInterval>& b) {
  uint64_t overlap = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint64_t begin = std::max(a[i].begin_ns, b[j].begin_ns);
    const uint64_t end = std::min(a[i].end_ns, b[j].end_ns);
    if (end > begin) overlap += end - begin;
    if (a[i].end_ns < b[j].end_ns) {
      ++i;
    } else {
      ++j;
    }
  }
  return overlap;
}

uint64_t LengthOfMerged(const std::vector<TimeInterval>& merged) {
  uint64_t total = 0;
  for (const TimeInterval& t : merged) total += t.end_ns - t.begin_ns;
  return total;
}

}  // namespace warpscope
