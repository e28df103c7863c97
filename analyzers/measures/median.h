// The median every analysis uses: of an odd count the middle value, of an even count the
// upper of the two middle ones (a value that occurred, no averaging of durations); 0 when
// empty.
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
