// Device memory in the job view (job.h): each rank's peak (memory.h's digest of its trace)
// against the ranks' median, the ranks whose peak differs, the ranks that leak, and the
// `memory` table.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/job/job.h"

namespace warpscope {
namespace {

// A peak differs only by at least this much, however small the median: a few MiB of buffers
// more on one rank is not worth a line.
constexpr uint64_t kMemoryPeakMinBytes = 256ull << 20;

std::string Bytes(uint64_t bytes) { return FormatBytes(static_cast<double>(bytes)); }

}  // namespace

void JudgeMemory(JobView& view) {
  std::vector<uint64_t> peaks;
  for (const RankDigest& r : view.ranks) {
    if (!r.memory.devices.empty()) peaks.push_back(r.PeakMemoryBytes());
  }
  if (peaks.empty()) return;
  std::sort(peaks.begin(), peaks.end());
  // The lower middle for an even count: an even job split into two halves names the upper half.
  const uint64_t median = peaks[(peaks.size() - 1) / 2];
  view.median_peak_memory_bytes = median;
  for (const RankDigest& r : view.ranks) {
    if (r.memory.devices.empty()) continue;
    const uint64_t peak = r.PeakMemoryBytes();
    const uint64_t diff = peak > median ? peak - median : median - peak;
    if (peaks.size() < 2 || diff < kMemoryPeakMinBytes ||
        static_cast<double>(diff) <= kMemoryPeakSpread * static_cast<double>(median)) {
      continue;
    }
    view.memory_outliers.push_back(r.RankOrIndex());
    view.memory_verdicts.push_back(absl::StrFormat(
        "memory: rank %d peaks at %s, %.0f%% %s the ranks' median of %s", r.RankOrIndex(),
        Bytes(peak),
        100.0 * static_cast<double>(diff) / static_cast<double>(std::max<uint64_t>(median, 1)),
        peak > median ? "above" : "below", Bytes(median)));
  }
  if (view.memory_outliers.empty() && peaks.size() > 1) {
    view.memory_verdicts.push_back(
        absl::StrFormat("memory: the ranks' peaks are within %.0f%% of their median, %s",
                        100 * kMemoryPeakSpread, Bytes(median)));
  }
  for (const RankDigest& r : view.ranks) {
    for (const DeviceMemoryDigest& d : r.memory.devices) {
      if (!d.growth.leak) continue;
      view.memory_verdicts.push_back(absl::StrCat(
          "memory: rank ", r.RankOrIndex(), " grows by ", d.growth.RateText(), " on device ",
          d.device_id, " (a leak)",
          d.growth_site.empty() ? "" : absl::StrCat(", most at ", d.growth_site)));
    }
    if (!r.memory.failures.empty()) {
      view.memory_verdicts.push_back(absl::StrCat("memory: rank ", r.RankOrIndex(), " had ",
                                                  r.memory.failures.size(),
                                                  " request(s) refused (out of memory)"));
    }
  }
}

Table JobMemoryTable(const JobView& view) {
  Table t({{"rank", true, CellKind::kInt},
           {"device", true, CellKind::kInt},
           {"peak_bytes", true, CellKind::kInt},
           {"reserved_at_peak_bytes", true, CellKind::kInt},
           {"peak_reserved_bytes", true, CellKind::kInt},
           {"capacity_bytes", true, CellKind::kInt},
           {"growth_per_step_bytes", true, CellKind::kReal},
           {"leak", false, CellKind::kBool},
           {"failed_requests", true, CellKind::kInt},
           {"differs", false, CellKind::kBool}});
  for (const RankDigest& r : view.ranks) {
    const bool differs = std::find(view.memory_outliers.begin(), view.memory_outliers.end(),
                                   r.RankOrIndex()) != view.memory_outliers.end();
    for (const DeviceMemoryDigest& d : r.memory.devices) {
      uint64_t failed = 0;
      for (const MemoryFailureDigest& f : r.memory.failures)
        failed += f.failure.device_id == d.device_id;
      t.AddRow({r.RankOrIndex(), d.device_id, d.peak_bytes, d.reserved_at_peak_bytes,
                d.peak_reserved_bytes, d.capacity_bytes == 0 ? Cell() : Cell(d.capacity_bytes),
                d.growth.slope ? Cell(d.growth.slope->per_step, 0) : Cell(),
                Cell::Bool(d.growth.leak), failed,
                Cell::Bool(differs && d.peak_bytes == r.PeakMemoryBytes())});
    }
  }
  return t;
}

}  // namespace warpscope
