// Launch times of kernels whose launch was not recorded (launch_times.h).
#include "analyzers/measures/launch_times.h"

#include <algorithm>
#include <iterator>

namespace warpscope {

void UnrecordedLaunchTimes::AddKnown(uint32_t device_id, uint32_t stream_id, uint64_t start_ns,
                                     uint64_t launch_ns) {
  known_[{device_id, stream_id}].emplace_back(start_ns, launch_ns);
  sorted_ = false;
}

PlacedLaunch UnrecordedLaunchTimes::Place(uint32_t device_id, uint32_t stream_id,
                                          uint64_t start_ns) {
  if (!sorted_) {
    for (auto& [stream, kernels] : known_) std::sort(kernels.begin(), kernels.end());
    sorted_ = true;
  }
  auto it = known_.find({device_id, stream_id});
  if (it == known_.end()) return {start_ns, true};
  const std::vector<std::pair<uint64_t, uint64_t>>& kernels = it->second;
  // The latest kernel that started at or before this work.
  auto after = std::upper_bound(
      kernels.begin(), kernels.end(), start_ns,
      [](uint64_t t, const std::pair<uint64_t, uint64_t>& k) { return t < k.first; });
  if (after == kernels.begin()) return {start_ns, true};
  return {std::prev(after)->second, false};
}

}  // namespace warpscope
