// The copy rules of `warpscope advise` (docs/advise.md, "Copies"): copies from pageable host
// memory, costed at the time above what a pinned copy of the same size takes, and host copies
// that run while no kernel does, costed at the kernel time they could have hidden under.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/advise/advise_timeline.h"
#include "analyzers/model/interval_union.h"

namespace warpscope::advise_internal {
namespace {

bool IsHostCopy(v1::CopyKind kind) {
  return kind == v1::COPY_KIND_HTOD || kind == v1::COPY_KIND_DTOH;
}

v1::MemoryKind HostSide(const MemcpyEvent& copy) {
  return copy.copy_kind == v1::COPY_KIND_HTOD ? copy.src_kind : copy.dst_kind;
}

// The pinned bandwidth (bytes/ns) per direction: the fastest pinned copy of at least 1 MiB
// in the trace, else the assumed one.
std::map<v1::CopyKind, std::pair<double, bool>> PinnedBandwidth(const TraceModel& model,
                                                                const AdviseOptions& options) {
  std::map<v1::CopyKind, std::pair<double, bool>> best;  // (bytes/ns, measured)
  for (v1::CopyKind kind : {v1::COPY_KIND_HTOD, v1::COPY_KIND_DTOH}) {
    best[kind] = {options.pinned_bytes_per_ns, false};
  }
  for (const MemcpyEvent& c : model.memcpys) {
    if (!IsHostCopy(c.copy_kind) || HostSide(c) != v1::MEMORY_KIND_PINNED) continue;
    if (c.bytes < (1u << 20) || c.duration_ns == 0) continue;
    const double bw = static_cast<double>(c.bytes) / static_cast<double>(c.duration_ns);
    auto& [value, measured] = best[c.copy_kind];
    if (!measured || bw > value) value = bw, measured = true;
  }
  return best;
}

using Intervals = std::vector<TimeInterval>;

// Length of [begin, end) covered by `merged`.
uint64_t Covered(const Intervals& merged, uint64_t begin, uint64_t end) {
  auto it = std::upper_bound(merged.begin(), merged.end(), begin,
                             [](uint64_t t, const TimeInterval& i) { return t < i.begin_ns; });
  if (it != merged.begin()) --it;
  uint64_t covered = 0;
  for (; it != merged.end() && it->begin_ns < end; ++it) {
    const uint64_t lo = std::max(it->begin_ns, begin), hi = std::min(it->end_ns, end);
    if (hi > lo) covered += hi - lo;
  }
  return covered;
}

}  // namespace

void FindPageableCopies(const AdviseTimeline& timeline, const AdviseOptions& options,
                        std::vector<AdviseFinding>* findings) {
  const TraceModel& model = timeline.model();
  const auto bandwidth = PinnedBandwidth(model, options);
  struct Group {
    uint64_t count = 0, bytes = 0, copy_ns = 0, excess_ns = 0, thread_id = 0;
    uint32_t device = 0;
    std::set<uint32_t> streams;
    const MemcpyEvent* worst = nullptr;
    uint64_t worst_excess = 0;
    std::vector<uint32_t> correlation_ids;  // for the call site of most of them
  };
  // Device, kind, call, place, thread, and whether before the steady state (one-time: the
  // weights, buffers set up once).
  std::map<std::tuple<uint32_t, v1::CopyKind, std::string, std::string, uint64_t, bool>, Group>
      groups;
  for (const auto& [device, work] : timeline.work_by_device()) {
    for (const GpuWork& w : work) {
      if (w.kind != WorkKind::kMemcpy) continue;
      const MemcpyEvent& c = model.memcpys[w.index];
      if (!IsHostCopy(c.copy_kind) || HostSide(c) != v1::MEMORY_KIND_PAGEABLE) continue;
      if (c.bytes < options.min_copy_bytes) continue;
      const double pinned_ns = static_cast<double>(c.bytes) / bandwidth.at(c.copy_kind).first;
      const uint64_t excess =
          c.duration_ns > pinned_ns ? c.duration_ns - NsFromDouble(pinned_ns) : 0;
      const ApiCallEvent* api = timeline.LaunchOf(c.correlation_id);
      const uint64_t thread = api == nullptr ? 0 : api->thread_id;
      std::string api_name, path;
      const uint64_t issued = api != nullptr ? api->start_ns : c.start_ns;
      if (api != nullptr) {
        api_name = std::string(api->name);
        path = timeline.PathAt(thread, api->start_ns);
      }
      const bool once = issued < timeline.steady_begin_ns();
      Group& g = groups[{device, c.copy_kind, api_name, path, thread, once}];
      g.count++, g.bytes += c.bytes, g.copy_ns += c.duration_ns, g.excess_ns += excess;
      g.thread_id = thread, g.device = device;
      g.streams.insert(c.stream_id);
      g.correlation_ids.push_back(c.correlation_id);
      if (g.worst == nullptr || excess > g.worst_excess) g.worst = &c, g.worst_excess = excess;
    }
  }
  for (const auto& [key, g] : groups) {
    const auto& [device, kind, api, path, thread, once] = key;
    const auto [pinned_bw, measured] = bandwidth.at(kind);
    AdviseFinding f;
    f.rule = std::string(kRulePageable);
    f.cost_ns = g.excess_ns;
    f.occurrences = g.count;
    f.device_id = g.device;
    f.nvtx_path = path;
    f.api_call = api;
    f.kernel = MemcpyOperationName(kind);
    f.stream = absl::StrJoin(g.streams, ",");
    f.where = timeline.CallSiteText(g.correlation_ids);
    timeline.DescribeThread(g.thread_id, &f);
    f.title = absl::StrCat(g.count, " ", std::string(CopyKindName(kind)), " cop",
                           g.count == 1 ? "y" : "ies", " from pageable host memory");
    if (!path.empty()) absl::StrAppend(&f.title, " in ", path);
    if (!f.where.empty()) absl::StrAppend(&f.title, " at ", f.where);
    f.one_time = once;
    if (once) absl::StrAppend(&f.title, ", before the steady state (one-time)");
    f.evidence = absl::StrFormat(
        "%s in %s: %.1f GB/s, against %.1f GB/s for pinned copies (%s)",
        FormatBytes(static_cast<double>(g.bytes)), FormatDuration(static_cast<double>(g.copy_ns)),
        static_cast<double>(g.bytes) / static_cast<double>(std::max<uint64_t>(g.copy_ns, 1)),
        pinned_bw, measured ? "the fastest pinned copy in the trace" : "assumed");
    f.fix =
        "Allocate the host buffer pinned (cudaMallocHost / cudaHostAlloc, PyTorch "
        "pin_memory=True) and copy with cudaMemcpyAsync (non_blocking=True).";
    f.worst_begin_ns = g.worst->start_ns;
    f.worst_end_ns = g.worst->end_ns();
    findings->push_back(std::move(f));
  }
}

void FindCopiesWithoutOverlap(const AdviseTimeline& timeline, const AdviseOptions& options,
                              std::vector<AdviseFinding>* findings) {
  const TraceModel& model = timeline.model();
  for (const auto& [device, work] : timeline.work_by_device()) {
    Intervals kernels, copies;
    for (const GpuWork& w : work) {
      if (w.kind == WorkKind::kKernel) kernels.push_back({w.start_ns, w.end_ns()});
      if (w.kind == WorkKind::kMemcpy && IsHostCopy(model.memcpys[w.index].copy_kind)) {
        copies.push_back({w.start_ns, w.end_ns()});
      }
    }
    kernels = MergedIntervals(std::move(kernels));
    copies = MergedIntervals(std::move(copies));
    uint64_t copy_alone = 0, count = 0, bytes = 0, worst = 0;
    const MemcpyEvent* worst_copy = nullptr;
    std::set<uint32_t> streams, kernel_streams;
    for (const GpuWork& w : work) {
      if (w.kind == WorkKind::kKernel) kernel_streams.insert(w.stream_id);
      if (w.kind != WorkKind::kMemcpy) continue;
      const MemcpyEvent& c = model.memcpys[w.index];
      if (!IsHostCopy(c.copy_kind) || HostSide(c) == v1::MEMORY_KIND_PAGEABLE) continue;
      if (c.bytes < options.min_copy_bytes) continue;
      const uint64_t alone = c.duration_ns - Covered(kernels, w.start_ns, w.end_ns());
      if (alone == 0) continue;
      copy_alone += alone, count++, bytes += c.bytes;
      streams.insert(c.stream_id);
      if (alone > worst) worst = alone, worst_copy = &c;
    }
    uint64_t kernel_alone = 0;
    for (const auto& [begin, end] : kernels)
      kernel_alone += end - begin - Covered(copies, begin, end);
    const uint64_t cost = std::min(copy_alone, kernel_alone);
    if (cost == 0 || worst_copy == nullptr) continue;
    bool shared = false;
    for (uint32_t s : streams) shared = shared || kernel_streams.count(s) != 0;
    AdviseFinding f;
    f.rule = std::string(kRuleNoOverlap);
    f.cost_ns = cost;
    f.occurrences = count;
    f.device_id = device;
    f.stream = absl::StrJoin(streams, ",");
    f.title = absl::StrCat(count, " host cop", count == 1 ? "y" : "ies", " ran while no kernel did",
                           shared ? ", on the stream the kernels use" : "");
    f.evidence = absl::StrCat(FormatBytes(static_cast<double>(bytes)), " copied in ",
                              FormatDuration(static_cast<double>(copy_alone)),
                              " without a kernel beside them; ",
                              FormatDuration(static_cast<double>(kernel_alone)),
                              " of kernels ran without a copy beside them");
    f.fix =
        "Copy on a stream of its own from pinned memory and double-buffer: the copy for "
        "step i+1 runs while the kernels of step i do (events order the two streams).";
    if (const ApiCallEvent* api = timeline.LaunchOf(worst_copy->correlation_id); api != nullptr) {
      f.api_call = std::string(api->name);
      f.where = timeline.CallSiteText(api->correlation_id);
      f.nvtx_path = timeline.PathAt(api->thread_id, api->start_ns);
      timeline.DescribeThread(api->thread_id, &f);
    }
    f.worst_begin_ns = worst_copy->start_ns;
    f.worst_end_ns = worst_copy->end_ns();
    findings->push_back(std::move(f));
  }
}

}  // namespace warpscope::advise_internal
