// How much of the kernels' time sampling saw: the share of kernel time and launches inside
// sampled spans (PM samples, stretches of PC sampling) and the holes, the stretches between
// sampled spans in which kernels ran. Kernels are added one at a time, so that a command can
// stream them: memory grows with the sampled spans, not with the launches.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_SAMPLING_COVERAGE_H_
#define WARPSCOPE_ANALYZERS_MEASURES_SAMPLING_COVERAGE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/measures/pm_attribution.h"
#include "analyzers/model/interval_union.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// A sampled figure that rests on less than this share of its kernel's time says so
// (docs/pm_sampling.md, *Coverage*). Half: below it, most of what the kernel did is unseen,
// and the unseen launches (warm-up, a phase before sampling started, a lost stretch) are the
// ones most likely to differ from the sampled ones.
inline constexpr double kLowCoverage = 0.5;

// Time in which sampling watched one device.
struct SampledSpan {
  uint32_t device_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// Where a hole lies relative to its device's sampled spans.
enum class HolePlace { kBeforeFirst, kBetween, kAfterLast, kNoSamples };
std::string_view HolePlaceName(HolePlace place);  // "before the first sample", ...

// A stretch of one device between sampled spans in which kernels ran.
struct SamplingHole {
  uint32_t device_id = 0;
  HolePlace place = HolePlace::kBetween;
  uint64_t begin_ns = 0;   // the first instant of kernel work in the stretch
  uint64_t end_ns = 0;     // the last
  uint64_t kernel_ns = 0;  // kernel time in the stretch, summed over launches
  uint64_t launches = 0;   // launches with time in the stretch
  uint64_t gap_ns = 0;     // kBetween: the stretch's length, sample to sample; else 0 (open)
};

struct CoverageTotals {
  uint64_t launches = 0;
  uint64_t covered_launches = 0;  // launches with some time inside a sampled span
  uint64_t kernel_ns = 0;         // summed over launches
  uint64_t covered_ns = 0;        // of kernel_ns, inside sampled spans
  double time_fraction() const {
    return kernel_ns > 0 ? static_cast<double>(covered_ns) / static_cast<double>(kernel_ns) : 0;
  }
  bool low() const { return launches > 0 && time_fraction() < kLowCoverage; }
};

class SamplingCoverage {
 public:
  // `spans` in any order; overlapping and touching spans of a device are merged. A device with
  // no span has every kernel in one hole (HolePlace::kNoSamples).
  explicit SamplingCoverage(std::span<const SampledSpan> spans);

  // Adds one launch of [start_ns, start_ns + duration_ns) on `device_id` to the totals and the
  // holes; returns its time inside sampled spans. A launch of no duration counts as covered
  // when a span holds its start; one whose end overflows 64 bits (a corrupt event) counts as a
  // launch without time.
  uint64_t AddKernel(uint32_t device_id, uint64_t start_ns, uint64_t duration_ns);

  const CoverageTotals& totals() const { return totals_; }
  // Holes with kernel work, the `max` with the most kernel time, in time order per device.
  std::vector<SamplingHole> LargestHoles(size_t max) const;
  uint64_t hole_count() const;  // all holes with kernel work

 private:
  struct Device {
    uint32_t id = 0;
    std::vector<TimeInterval> spans;  // merged, in time order
    std::vector<SamplingHole> holes;  // holes[i] ends where spans[i] begins; one more after
  };
  Device& DeviceOf(uint32_t device_id);
  static void AddToHole(SamplingHole& hole, uint64_t lo, uint64_t hi);

  std::vector<Device> devices_;
  CoverageTotals totals_;
};

// The spans PM samples cover (ExtractActiveWarpSamples: the samples the analyses can use).
std::vector<SampledSpan> PmSampledSpans(const ActiveWarpSamples& samples);

// The spans in which PC sampling ran on each device: for each context it sampled there, the
// capture windows (the collector samples only inside them; the whole trace when it has none),
// up to the context's last read (samples after it never reached the trace), without the
// stretches whose read found the hardware buffer full (CUPTI then returns none of that
// stretch's samples). Per device, not per context: CUPTI samples one context per device, and
// kernel records need not name their context.
std::vector<SampledSpan> PcSampledSpans(const TraceModel& model);

// "LOW COVERAGE: PM samples cover 39 of 300 launches (12.6% of the kernel's time); the figures
// describe those launches only" when `covered_fraction` of the time is below kLowCoverage;
// "" otherwise and when `launches` is 0 (the kernels' launches are not in the trace).
std::string LowCoverageNote(std::string_view sampling, uint64_t covered_launches, uint64_t launches,
                            double covered_fraction);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_SAMPLING_COVERAGE_H_
