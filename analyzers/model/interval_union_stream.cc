// The union of intervals folded as they stream by (interval_union_stream.h).
#include "analyzers/model/interval_union_stream.h"

#include <algorithm>

namespace warpscope {

void IntervalUnionStream::Add(TimeInterval interval) {
  waiting_.push_back(interval);
  if (waiting_.size() >= 2 * window_) Fold(window_);
}

void IntervalUnionStream::Fold(size_t n) {
  std::sort(waiting_.begin(), waiting_.end(),
            [](const TimeInterval& a, const TimeInterval& b) { return a.begin_ns < b.begin_ns; });
  for (size_t i = 0; i < n; ++i) {
    const TimeInterval& next = waiting_[i];
    if (totals_.intervals++ == 0) {
      totals_.begin_ns = next.begin_ns;
      stretch_begin_ = next.begin_ns;
      stretch_end_ = next.end_ns;
      continue;
    }
    if (next.begin_ns < stretch_begin_) {
      ++totals_.late;
      totals_.begin_ns = std::min(totals_.begin_ns, next.begin_ns);
    }
    if (next.begin_ns > stretch_end_) {
      totals_.covered_ns += stretch_end_ - stretch_begin_;
      ++totals_.gaps;
      totals_.longest_gap_ns = std::max(totals_.longest_gap_ns, next.begin_ns - stretch_end_);
      stretch_begin_ = next.begin_ns;
      stretch_end_ = next.end_ns;
    } else {
      stretch_end_ = std::max(stretch_end_, next.end_ns);
    }
  }
  waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<std::ptrdiff_t>(n));
}

UnionTotals IntervalUnionStream::Finish() {
  Fold(waiting_.size());
  if (totals_.intervals > 0) {
    totals_.covered_ns += stretch_end_ - stretch_begin_;
    totals_.end_ns = stretch_end_;
  }
  return totals_;
}

}  // namespace warpscope
