// The memory rules of `warpscope advise` (docs/advise.md): memory-leak (device memory that
// grows every steady step, with the line that allocates it and the steps left until the device
// is full), out-of-memory (a request the driver refused, with what held memory then) and
// memory-fragmentation (reserved memory far above what is in use at the peak). Their figures
// are `warpscope memory`'s (memory.h DigestMemory); their cost is in bytes, not time.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/advise/advise_timeline.h"
#include "analyzers/analyses/memory.h"

namespace warpscope {
namespace {

// A leak that fills the device within this many steady steps is high severity.
constexpr int64_t kLeakHighSteps = 10'000;
// Reserved and unused at the peak counts as fragmentation from this share of what is reserved
// and this many bytes.
constexpr double kFragmentationShare = 0.25;
constexpr uint64_t kFragmentationMinBytes = 256ull << 20;

std::string Bytes(uint64_t bytes) { return FormatBytes(static_cast<double>(bytes)); }

AdviseFinding MemoryFinding(std::string_view rule, uint32_t device) {
  AdviseFinding f;
  f.rule = std::string(rule);
  f.device_id = device;
  f.one_time = false;
  return f;
}

void AddLeak(const DeviceMemoryDigest& d, std::vector<AdviseFinding>* findings) {
  const MemoryGrowth& g = d.growth;
  const bool by_steps = g.progress.basis == MemoryProgress::Basis::kSteps;
  AdviseFinding f = MemoryFinding(kRuleMemoryLeak, d.device_id);
  // Without steps the cost is per 1,000 kernels launched and no step count is given.
  const double per_step = std::max(by_steps ? g.slope->per_step : 1000 * g.PerKernel(), 1.0);
  f.memory_bytes = static_cast<uint64_t>(per_step);
  if (d.capacity_bytes > 0 && by_steps) {
    const uint64_t headroom = d.capacity_bytes > d.peak_bytes ? d.capacity_bytes - d.peak_bytes : 0;
    f.steps_to_full = static_cast<int64_t>(static_cast<double>(headroom) / per_step);
  }
  f.severity = f.steps_to_full >= 0 && f.steps_to_full < kLeakHighSteps ? AdviseSeverity::kHigh
                                                                        : AdviseSeverity::kMedium;
  f.occurrences = d.steady_steps;
  f.where = d.growth_site;
  f.worst_begin_ns = d.steady_begin_ns;
  f.worst_end_ns = d.steady_end_ns;
  f.title = absl::StrCat("device memory grows by ", g.RateText(),
                         " and is not given back (a leak)",
                         d.growth_site.empty() ? "" : absl::StrCat(", most at ", d.growth_site));
  f.evidence = absl::StrCat(
      by_steps ? absl::StrCat("in use at the start of each of the ", d.steady_steps,
                              " steady steps rises by ")
               : "in use at evenly spaced kernels rises by ",
      g.RateText(true), ", ", Bytes(g.gained), " in all");
  if (!d.growth_site.empty()) {
    absl::StrAppend(&f.evidence, "; ", d.growth_site, " (", d.growth_owner, ") holds ",
                    Bytes(d.growth_site_bytes), " more at the end than at the first steady point");
  }
  absl::StrAppend(&f.evidence, "; peak ", Bytes(d.peak_bytes),
                  d.capacity_bytes == 0
                      ? " (the device's size is not in the trace)"
                  : by_steps ? absl::StrCat(" of ", Bytes(d.capacity_bytes), ": full in about ",
                                            f.steps_to_full, " more steps at this rate")
                             : absl::StrCat(" of ", Bytes(d.capacity_bytes)));
  f.fix =
      "free what that line keeps from step to step: a list or dict that collects tensors (keep "
      "loss.item() or .detach().cpu(), not the tensor), a cache without a bound, or a graph kept "
      "alive by a stored output; `warpscope memory` lists every growing site";
  findings->push_back(std::move(f));
}

void AddFragmentation(const DeviceMemoryDigest& d, std::vector<AdviseFinding>* findings) {
  if (d.reserved_at_peak_bytes <= d.peak_bytes) return;
  const uint64_t unused = d.reserved_at_peak_bytes - d.peak_bytes;
  if (unused < kFragmentationMinBytes ||
      static_cast<double>(unused) <
          kFragmentationShare * static_cast<double>(d.reserved_at_peak_bytes)) {
    return;
  }
  AdviseFinding f = MemoryFinding(kRuleFragmentation, d.device_id);
  f.memory_bytes = unused;
  f.severity = d.capacity_bytes > 0 && unused * 10 >= d.capacity_bytes ? AdviseSeverity::kMedium
                                                                       : AdviseSeverity::kLow;
  f.occurrences = 1;
  f.worst_begin_ns = f.worst_end_ns = d.peak_ns;
  f.title = absl::StrCat(Bytes(unused), " reserved by stream-ordered pools but unused at the peak");
  f.evidence = absl::StrFormat(
      "at the peak %s in use and %s reserved (%.0f%% of it unused); held by %s",
      Bytes(d.peak_bytes), Bytes(d.reserved_at_peak_bytes),
      100.0 * static_cast<double>(unused) / static_cast<double>(d.reserved_at_peak_bytes),
      MemoryOwnersText(d.owners_at_peak, 3));
  f.fix =
      "let the pools give memory back (cudaMemPoolSetAttribute "
      "cudaMemPoolAttrReleaseThreshold, cudaMemPoolTrimTo), or allocate blocks of fewer sizes so "
      "that freed ones are reused";
  findings->push_back(std::move(f));
}

// One finding per device and call site of refused requests, the largest request's figures.
void AddFailures(const MemoryDigest& m, std::vector<AdviseFinding>* findings) {
  std::map<std::pair<uint32_t, std::string>, std::vector<const MemoryFailureDigest*>> by_site;
  for (const MemoryFailureDigest& f : m.failures) {
    by_site[{f.failure.device_id, f.site}].push_back(&f);
  }
  for (const auto& [key, failures] : by_site) {
    const MemoryFailureDigest& worst =
        **std::max_element(failures.begin(), failures.end(), [](const auto* a, const auto* b) {
          return a->failure.bytes_asked < b->failure.bytes_asked;
        });
    const MemoryFailure& x = worst.failure;
    AdviseFinding f = MemoryFinding(kRuleOutOfMemory, x.device_id);
    f.memory_bytes = x.bytes_asked;
    f.severity = AdviseSeverity::kHigh;
    f.occurrences = failures.size();
    f.where = worst.site;
    f.worst_begin_ns = f.worst_end_ns = x.timestamp_ns;
    f.title = absl::StrCat("a request for ", Bytes(x.bytes_asked),
                           " of device memory was refused (out of memory)");
    f.evidence = absl::StrCat(Bytes(x.in_use_bytes), " in use and ", Bytes(x.reserved_bytes),
                              " reserved when it was asked (driver result ", x.result, ")");
    if (!x.owners.empty())
      absl::StrAppend(&f.evidence, "; held by ", MemoryOwnersText(x.owners, 3));
    if (x.pool_free_bytes > 0) {
      absl::StrAppend(&f.evidence, "; the pools held ", Bytes(x.pool_free_bytes),
                      " reserved but unused (fragmentation)");
    }
    f.fix = x.pool_free_bytes >= x.bytes_asked
                ? "the pools' unused memory would have held it: trim the pools before large "
                  "requests (cudaMemPoolTrimTo) or allocate fewer distinct sizes"
                : "ask for less at that line (a smaller batch or sequence, activation "
                  "checkpointing, sharding) or free what the largest owners hold first; "
                  "`warpscope memory` lists what was live";
    findings->push_back(std::move(f));
  }
}

}  // namespace

std::string MemoryCostText(const AdviseFinding& f) {
  if (f.rule == kRuleMemoryLeak) {
    return absl::StrCat(
        Bytes(f.memory_bytes), " a steady step",
        f.steps_to_full < 0 ? "" : absl::StrCat("; device full in ~", f.steps_to_full, " steps"));
  }
  if (f.rule == kRuleOutOfMemory) return absl::StrCat(Bytes(f.memory_bytes), " refused");
  return absl::StrCat(Bytes(f.memory_bytes), " unused at the peak");
}

namespace advise_internal {

void FindMemoryIssues(const TraceModel& model, const AdviseOptions& options,
                      std::vector<AdviseFinding>* findings) {
  const MemoryDigest m = DigestMemory(model, options.device, options.step);
  std::vector<AdviseFinding> found;
  AddFailures(m, &found);
  for (const DeviceMemoryDigest& d : m.devices) {
    if (d.growth.leak) AddLeak(d, &found);
  }
  for (const DeviceMemoryDigest& d : m.devices) AddFragmentation(d, &found);
  for (AdviseFinding& f : found) findings->push_back(std::move(f));
}

}  // namespace advise_internal
}  // namespace warpscope
