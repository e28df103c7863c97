// The union of GPU intervals folded as they stream by (summary's busy time in fixed memory),
// beside interval_union.h's union of intervals held whole.
#ifndef WARPSCOPE_ANALYZERS_MODEL_INTERVAL_UNION_STREAM_H_
#define WARPSCOPE_ANALYZERS_MODEL_INTERVAL_UNION_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analyzers/model/interval_union.h"

namespace warpscope {

// The totals of the union of intervals handed over one at a time, nearly in begin order (GPU
// records as a trace file gives them), in fixed memory: up to 2 x `window` intervals wait to
// be sorted; the earlier half is then folded into the totals. An interval that begins before
// the stretch being folded (more than `window` intervals out of place) is folded as if it
// began there and counted in `late`: its part before that stretch may have been idle.
struct UnionTotals {
  uint64_t begin_ns = 0;    // the first start
  uint64_t end_ns = 0;      // the latest end
  uint64_t covered_ns = 0;  // the length of the union
  uint64_t gaps = 0;
  uint64_t longest_gap_ns = 0;
  uint64_t intervals = 0;
  uint64_t late = 0;
};

class IntervalUnionStream {
 public:
  static constexpr size_t kDefaultWindow = size_t{1} << 15;
  explicit IntervalUnionStream(size_t window = kDefaultWindow) : window_(window) {}
  void Add(TimeInterval interval);
  UnionTotals Finish();  // folds what waits; call once, after the last Add

 private:
  void Fold(size_t n);  // sorts what waits and folds its first n
  size_t window_;
  std::vector<TimeInterval> waiting_;
  UnionTotals totals_;
  uint64_t stretch_begin_ = 0, stretch_end_ = 0;  // the stretch being folded
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_INTERVAL_UNION_STREAM_H_
