// The median of a value that occurred (steps, job and straggler figures): of an odd count the
// middle value, of an even count the upper of the two middle ones, no averaging; 0 when empty.
// Summary's duration statistics average the two middle ones instead (DurationStats).
#ifndef WARPSCOPE_ANALYZERS_MEASURES_MEDIAN_H_
#define WARPSCOPE_ANALYZERS_MEASURES_MEDIAN_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace warpscope {

inline uint64_t MedianOf(std::vector<uint64_t> values) {
  if (values.empty()) return 0;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_MEDIAN_H_
