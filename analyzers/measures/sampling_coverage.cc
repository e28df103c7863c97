// Sampling coverage of kernel time: sampled spans per device, holes, totals (sampling_coverage.h).
#include "analyzers/measures/sampling_coverage.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "absl/strings/str_format.h"
#include "analyzers/model/trace_limits.h"

namespace warpscope {
namespace {

constexpr uint64_t kForever = std::numeric_limits<uint64_t>::max();

// `spans` (merged, in time order) without `cuts` (merged, in time order).
std::vector<TimeInterval> Subtract(const std::vector<TimeInterval>& spans,
                                   const std::vector<TimeInterval>& cuts) {
  std::vector<TimeInterval> out;
  for (TimeInterval span : spans) {
    for (const TimeInterval& cut : cuts) {
      if (cut.end_ns <= span.begin_ns || cut.begin_ns >= span.end_ns) continue;
      if (cut.begin_ns > span.begin_ns) out.push_back({span.begin_ns, cut.begin_ns});
      span.begin_ns = std::min(span.end_ns, cut.end_ns);
    }
    if (span.end_ns > span.begin_ns) out.push_back(span);
  }
  return out;
}

}  // namespace

std::string_view HolePlaceName(HolePlace place) {
  switch (place) {
    case HolePlace::kBeforeFirst:
      return "before the first sample";
    case HolePlace::kBetween:
      return "between samples";
    case HolePlace::kAfterLast:
      return "after the last sample";
    case HolePlace::kNoSamples:
      return "no samples at all";
  }
  return "";
}

SamplingCoverage::SamplingCoverage(std::span<const SampledSpan> spans) {
  std::map<uint32_t, std::vector<TimeInterval>> by_device;
  for (const SampledSpan& s : spans) {
    if (s.end_ns > s.start_ns) by_device[s.device_id].push_back({s.start_ns, s.end_ns});
  }
  for (auto& [id, intervals] : by_device) {
    Device& device = devices_.emplace_back();
    device.id = id;
    device.spans = MergedIntervals(std::move(intervals));
    device.holes.resize(device.spans.size() + 1);
    for (size_t i = 0; i < device.holes.size(); ++i) {
      device.holes[i].device_id = id;
      device.holes[i].place = i == 0                     ? HolePlace::kBeforeFirst
                              : i == device.spans.size() ? HolePlace::kAfterLast
                                                         : HolePlace::kBetween;
      if (device.holes[i].place == HolePlace::kBetween) {
        device.holes[i].gap_ns = device.spans[i].begin_ns - device.spans[i - 1].end_ns;
      }
    }
  }
}

SamplingCoverage::Device& SamplingCoverage::DeviceOf(uint32_t device_id) {
  for (Device& device : devices_) {
    if (device.id == device_id) return device;
  }
  Device& device = devices_.emplace_back();
  device.id = device_id;
  device.holes.push_back({.device_id = device_id, .place = HolePlace::kNoSamples});
  return device;
}

void SamplingCoverage::AddToHole(SamplingHole& hole, uint64_t lo, uint64_t hi) {
  hole.begin_ns = hole.launches == 0 ? lo : std::min(hole.begin_ns, lo);
  hole.end_ns = hole.launches == 0 ? hi : std::max(hole.end_ns, hi);
  hole.kernel_ns += hi - lo;
  ++hole.launches;
}

uint64_t SamplingCoverage::AddKernel(uint32_t device_id, uint64_t start_ns, uint64_t duration_ns) {
  ++totals_.launches;
  if (EndOverflows(start_ns, duration_ns)) return 0;
  Device& device = DeviceOf(device_id);
  const std::vector<TimeInterval>& spans = device.spans;
  const uint64_t end_ns = start_ns + duration_ns;
  totals_.kernel_ns += duration_ns;
  // The first span that ends after the start: the kernel's time before it is in its hole.
  size_t i = std::partition_point(spans.begin(), spans.end(),
                                  [&](const TimeInterval& s) { return s.end_ns <= start_ns; }) -
             spans.begin();
  if (duration_ns == 0) {
    if (i < spans.size() && spans[i].begin_ns <= start_ns) {
      ++totals_.covered_launches;
    } else {
      AddToHole(device.holes[i], start_ns, start_ns);
    }
    return 0;
  }
  uint64_t covered = 0;
  for (uint64_t t = start_ns; t < end_ns;) {
    if (i == spans.size() || t < spans[i].begin_ns) {
      const uint64_t hi = i == spans.size() ? end_ns : std::min(end_ns, spans[i].begin_ns);
      AddToHole(device.holes[i], t, hi);
      t = hi;
      continue;
    }
    const uint64_t hi = std::min(end_ns, spans[i].end_ns);
    covered += hi - t;
    t = hi;
    ++i;
  }
  totals_.covered_ns += covered;
  if (covered > 0) ++totals_.covered_launches;
  return covered;
}

std::vector<SamplingHole> SamplingCoverage::LargestHoles(size_t max) const {
  std::vector<SamplingHole> holes;
  for (const Device& device : devices_) {
    for (const SamplingHole& hole : device.holes) {
      if (hole.launches > 0) holes.push_back(hole);
    }
  }
  std::stable_sort(holes.begin(), holes.end(), [](const SamplingHole& a, const SamplingHole& b) {
    return a.kernel_ns > b.kernel_ns;
  });
  if (holes.size() > max) holes.resize(max);
  std::sort(holes.begin(), holes.end(), [](const SamplingHole& a, const SamplingHole& b) {
    return std::tie(a.device_id, a.begin_ns) < std::tie(b.device_id, b.begin_ns);
  });
  return holes;
}

uint64_t SamplingCoverage::hole_count() const {
  uint64_t n = 0;
  for (const Device& device : devices_) {
    for (const SamplingHole& hole : device.holes) n += hole.launches > 0 ? 1 : 0;
  }
  return n;
}

std::vector<SampledSpan> PmSampledSpans(const ActiveWarpSamples& samples) {
  std::vector<SampledSpan> spans;
  spans.reserve(samples.samples.size());
  for (const ActiveWarpSample& s : samples.samples) {
    spans.push_back({s.device_id, s.start_ns, s.end_ns});
  }
  return spans;
}

std::vector<SampledSpan> PcSampledSpans(const TraceModel& model) {
  std::vector<TimeInterval> windows;
  for (const CaptureWindowRange& w : model.capture_windows) {
    windows.push_back({w.begin_ns, w.end_ns.value_or(kForever)});
  }
  if (windows.empty()) windows.push_back({0, kForever});
  windows = MergedIntervals(std::move(windows));
  // Each read returns the samples since the context's previous read.
  std::map<std::pair<uint32_t, uint32_t>, std::vector<const PcSampleBatch*>> reads;
  for (const PcSampleBatch& b : model.pc_sample_batches) {
    reads[{b.device_id, b.context_id}].push_back(&b);
  }
  std::vector<SampledSpan> spans;
  for (auto& [where, batches] : reads) {
    std::stable_sort(batches.begin(), batches.end(),
                     [](const PcSampleBatch* a, const PcSampleBatch* b) {
                       return a->timestamp_ns < b->timestamp_ns;
                     });
    std::vector<TimeInterval> lost;
    uint64_t previous = 0;
    for (const PcSampleBatch* b : batches) {
      if (b->hardware_buffer_full && b->timestamp_ns > previous) {
        lost.push_back({previous, b->timestamp_ns});
      }
      previous = b->timestamp_ns;
    }
    std::vector<TimeInterval> sampled;
    for (const TimeInterval& w : windows) {
      const uint64_t end = std::min(w.end_ns, previous);
      if (end > w.begin_ns) sampled.push_back({w.begin_ns, end});
    }
    for (const TimeInterval& s : Subtract(sampled, MergedIntervals(std::move(lost)))) {
      spans.push_back({where.first, s.begin_ns, s.end_ns});
    }
  }
  return spans;
}

std::string LowCoverageNote(std::string_view sampling, uint64_t covered_launches, uint64_t launches,
                            double covered_fraction) {
  if (launches == 0 || covered_fraction >= kLowCoverage) return "";
  return absl::StrFormat(
      "LOW COVERAGE: the figures rest on %u of %u launches (%.1f%% of the kernel's time) with "
      "%s samples; the launches without them may differ",
      covered_launches, launches, 100 * covered_fraction, sampling);
}

}  // namespace warpscope
