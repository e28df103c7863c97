// Where a long idle gap happened and what the trace shows of the host then: the place and the
// account that the one-off and start-up findings give of their longest gap (docs/advise.md,
// "Where a one-off happened").
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/advise/advise_gap_groups.h"
#include "analyzers/measures/call_sites.h"
#include "analyzers/measures/host_waits.h"
#include "analyzers/model/interval_union.h"

namespace warpscope::advise_internal {
namespace {

std::string Ms(uint64_t ns) { return FormatDuration(static_cast<double>(ns)); }

// The API calls of one thread that overlap a gap: the runtime calls the program wrote, or the
// driver calls where the thread made no runtime call then (a library on the driver API).
std::vector<const ApiCallEvent*> CallsDuring(const TraceModel& model, uint64_t thread_id,
                                             const Gap& gap) {
  std::vector<const ApiCallEvent*> runtime, driver;
  for (const ApiCallEvent& api : model.api_calls) {
    if (api.thread_id != thread_id || api.end_ns() <= gap.begin_ns || api.start_ns >= gap.end_ns) {
      continue;
    }
    (api.domain == v1::API_DOMAIN_RUNTIME ? runtime : driver).push_back(&api);
  }
  return runtime.empty() ? driver : runtime;
}

uint64_t WithinGap(const ApiCallEvent& api, const Gap& gap) {
  return std::min(api.end_ns(), gap.end_ns) - std::max(api.start_ns, gap.begin_ns);
}

// The recording's trace kinds (WARPSCOPE_TRACE as used), "" when the header does not say.
std::string TraceKinds(const TraceModel& model) {
  for (const auto& [name, value] : model.header.config) {
    if (name == "WARPSCOPE_TRACE") return value;
  }
  return "";
}

// What to record to see more of such a gap next time.
std::string RecordHint(const TraceModel& model, bool has_range) {
  std::vector<std::string> hints;
  if (model.api_stacks.empty()) hints.emplace_back("--stacks (the line of each CUDA call)");
  const std::string kinds = TraceKinds(model);
  if (!kinds.empty() && kinds.find("driver") == std::string::npos) {
    hints.emplace_back(
        absl::StrCat("-t ", kinds, ",driver (CUDA calls libraries make on the driver API)"));
  }
  if (!has_range && model.nvtx_ranges.empty()) {
    hints.emplace_back("NVTX ranges around the program's phases (the phase it was in)");
  }
  if (hints.empty()) return "";
  return absl::StrCat("; to see more, record with ", absl::StrJoin(hints, ", "));
}

// "cudaMalloc 4.00 ms in 1 call, cudaStreamSynchronize 10.74 us in 1 call (a wait)": the three
// names with the most time, then how many more.
std::string CallsByTime(const std::map<std::string, std::pair<uint64_t, uint64_t>>& by_name) {
  std::vector<std::pair<uint64_t, std::string>> ranked;
  for (const auto& [name, v] : by_name) {
    ranked.emplace_back(v.first, absl::StrCat(name, " ", Ms(v.first), " in ", v.second,
                                              v.second == 1 ? " call" : " calls",
                                              IsSynchronizeCall(name) ? " (a wait)" : ""));
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> parts;
  for (size_t i = 0; i < ranked.size() && i < 3; ++i) parts.push_back(ranked[i].second);
  if (ranked.size() > 3) parts.push_back(absl::StrCat(ranked.size() - 3, " more"));
  return absl::StrJoin(parts, ", ");
}

}  // namespace

GapPlace PlaceOfGap(const AdviseTimeline& timeline, const Gap& gap, uint64_t thread_id) {
  const TraceModel& model = timeline.model();
  GapPlace place;
  place.path = timeline.PathAt(thread_id, gap.begin_ns + gap.length() / 2);
  std::string thread = absl::StrCat("thread ", thread_id);
  if (const ThreadInfo* info = model.FindThread(thread_id); info != nullptr) {
    thread = info->name.empty() ? absl::StrCat("thread ", info->os_tid)
                                : absl::StrCat("thread ", info->os_tid, " (", info->name, ")");
  }
  // Trace time is what --window takes; the offset is from the trace's first event.
  const uint64_t from_start = gap.begin_ns - std::min(gap.begin_ns, model.span.begin_ns);
  place.text = absl::StrFormat(
      "the longest, %s, began %s into the trace (%.3f ms trace time) on %s, %s", Ms(gap.length()),
      Ms(from_start), static_cast<double>(gap.begin_ns) / 1e6, thread,
      place.path.empty() ? std::string("outside any NVTX range")
                         : absl::StrCat("in NVTX range ", place.path));
  const std::vector<const ApiCallEvent*> calls = CallsDuring(model, thread_id, gap);
  // The longest call during the gap names the line; with none, the launch that ended it.
  const ApiCallEvent* longest = nullptr;
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_name;  // name -> (ns in gap, calls)
  std::vector<TimeInterval> covered;
  for (const ApiCallEvent* api : calls) {
    const uint64_t ns = WithinGap(*api, gap);
    auto& [name_ns, count] = by_name[std::string(api->name)];
    name_ns += ns;
    ++count;
    covered.push_back({std::max(api->start_ns, gap.begin_ns), std::min(api->end_ns(), gap.end_ns)});
    if (longest == nullptr || ns > WithinGap(*longest, gap)) longest = api;
  }
  // The line: of the longest call during the gap, else of the launch that ended it; a call
  // without a frame of the program's own names none.
  const ApiCallEvent* launch = timeline.LaunchOf(gap.after->correlation_id);
  // A call at the gap's edge (the wait before it, the launch after it) is not where the host
  // spent the gap: the longest call names the line only when it covers a tenth of it.
  if (longest != nullptr && WithinGap(*longest, gap) * 10 < gap.length()) longest = nullptr;
  bool in_call = false;
  if (!model.api_stacks.empty()) {
    for (const ApiCallEvent* api : {longest, launch}) {
      if (api == nullptr) continue;
      if (const CallSite site = CallSiteOfCall(model, api->correlation_id); site.frame != nullptr) {
        place.where = site.Display();
        in_call = api == longest;
        break;
      }
    }
  }
  if (!place.where.empty()) {
    absl::StrAppend(&place.text, in_call ? ", in a call made at " : ", before the launch at ",
                    place.where);
  }
  const std::string kOwnCode =
      "the host ran code of its own (Python, I/O, garbage collection, a lock) or was not "
      "scheduled";
  if (calls.empty()) {
    absl::StrAppend(&place.text,
                    ": the trace shows no CUDA call on that thread during it: ", kOwnCode);
  } else {
    const uint64_t in_calls = LengthOfMerged(MergedIntervals(std::move(covered)));
    absl::StrAppend(&place.text, ": CUDA calls on that thread were under way for ", Ms(in_calls),
                    " of it (", CallsByTime(by_name), ")");
    if (gap.length() - in_calls >= gap.length() / 10) {
      absl::StrAppend(&place.text, "; for the other ", Ms(gap.length() - in_calls),
                      " the trace shows none: ", kOwnCode);
    }
  }
  absl::StrAppend(&place.text, RecordHint(model, !place.path.empty()));
  return place;
}

}  // namespace warpscope::advise_internal
