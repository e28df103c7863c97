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
#include <optional>

namespace warpscope {

struct PlacedLaunch {
  uint64_t ns = 0;
  // Placed at the work's own start, for want of a known launch before it on its stream.
  bool at_start = false;
};

// The rule on one stream, its work taken in order of start, a kernel whose launch is known
// before other work that starts with it (of those, the one launched latest last): an external
// sort gives that order, so that the work of a trace of any length is placed in bounded memory.
class StreamLaunchPlacer {
 public:
  // The next kernel on the stream whose launch is known: the host launched it at `launch_ns`.
  void Known(uint64_t launch_ns) { latest_ = launch_ns; }
  // Where the launch of the next work with no launch record is placed.
  PlacedLaunch Place(uint64_t start_ns) const {
    if (!latest_.has_value()) return {start_ns, true};
    return {*latest_, false};
  }

 private:
  std::optional<uint64_t> latest_;  // the launch of the latest kernel taken with a known one
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_LAUNCH_TIMES_H_
