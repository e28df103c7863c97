// Where on the host's time line a kernel goes whose launch was not recorded: kernels launched
// through the driver API while only the runtime API was traced (cuBLASLt and cutlass GEMMs,
// Triton, NCCL without its calls) have no API call that says when the host launched them. One
// rule for every figure that needs that time: the job view's steps and the Kineto export's
// stand-in launches, so that HTA reading the export counts each kernel in the step the job does.
//
// The rule: a stream runs its work in the order it was launched, so such a kernel was launched
// after the latest kernel before it on its stream whose launch is known; its launch is placed at
// that one's launch, the earliest it can have been. Where no kernel before it on its stream has
// a known launch, it is placed at its own start, the latest it can have been.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_LAUNCH_TIMES_H_
#define WARPSCOPE_ANALYZERS_MEASURES_LAUNCH_TIMES_H_

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace warpscope {

struct PlacedLaunch {
  uint64_t ns = 0;
  // Placed at the work's own start, for want of a known launch before it on its stream.
  bool at_start = false;
};

class UnrecordedLaunchTimes {
 public:
  // A kernel whose launch is known: it started on (device, stream) at `start_ns`, and the host
  // launched it at `launch_ns`. 16 bytes each.
  void AddKnown(uint32_t device_id, uint32_t stream_id, uint64_t start_ns, uint64_t launch_ns);

  // Where the launch of work that started on (device, stream) at `start_ns` with no launch
  // record is placed (the rule above), from the known launches added so far.
  PlacedLaunch Place(uint32_t device_id, uint32_t stream_id, uint64_t start_ns);

 private:
  // Per (device, stream): (start, launch) of kernels with a known launch, sorted on first use.
  std::map<std::pair<uint32_t, uint32_t>, std::vector<std::pair<uint64_t, uint64_t>>> known_;
  bool sorted_ = true;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_LAUNCH_TIMES_H_
