// The idle gaps of `warpscope advise`, shared by its two files: advise_gaps.cc puts each gap
// down to a cause and sums gaps with one cause in one place into a group; advise_gap_findings.cc
// words a group as a finding (docs/advise.md, "Idle gaps").
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_ADVISE_ADVISE_GAP_GROUPS_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_ADVISE_ADVISE_GAP_GROUPS_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/analyses/advise/advise.h"
#include "analyzers/analyses/advise/advise_timeline.h"

namespace warpscope::advise_internal {

// A steady-state gap this many times the median gap of its cause is an outlier
// (advise_gaps.cc, SteadyState).
inline constexpr uint64_t kOutlierFactor = 20;

struct Gap {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  const GpuWork* before = nullptr;  // the work that ended at begin_ns
  const GpuWork* after = nullptr;   // the first work to start at end_ns
  uint64_t length() const { return end_ns - begin_ns; }
};

// What a gap was put down to, and where.
struct GapCause {
  std::string_view rule;
  // API call (waits; launch-bound gaps past a wait's lead: the wait's), or the range name
  std::string label;
  std::string path;
  uint64_t thread_id = 0;
  // Launch-bound gaps: where the host was halfway through the gap (a stall's place).
  std::string host_path{};
  // Waits: GPU work the host had queued ahead when it began waiting (wait start to the gap).
  uint64_t lead_ns = 0;
  // Waits and launch-bound gaps: the call site of the wait or launch ("" without stacks).
  std::string where{};
  // Waits: the wait's call site as host blocked time is summed by (CallSite::Display(), "no
  // stack" without stacks).
  std::string wait_site{};
};

struct GapGroup {
  GapCause cause;
  uint32_t device_id = 0;
  std::vector<uint64_t> gaps_ns;
  uint64_t total_ns = 0;
  Gap worst;
  std::map<std::string, uint64_t> next_work;  // name of the work after each gap -> count
  std::map<std::string, uint64_t> prev_work;  // name of the work before it -> count
  std::set<uint32_t> streams;
  std::map<std::string, uint64_t> where_ns;  // call site of each gap's wait or launch -> ns
  std::vector<uint64_t> next_durations_ns;  // duration of the work after each gap
  uint64_t catchup_gaps = 0;  // launch gaps while the host refilled the queue after the wait
  uint64_t catchup_ns = 0;
  // Of the catch-up gaps, the idle time beyond the wait's lead (left to launch-bound): what
  // the fix saves on top if the host keeps up with the GPU once it no longer waits.
  uint64_t beyond_lead_ns = 0;
  // startup and one-off: ns per cause rule the gaps would otherwise have had
  std::map<std::string_view, uint64_t> split_causes;
  std::string steady_range;  // startup: the repeated range
  // one-off: how much of the gaps overhead records (CUPTI's, warpscope's flushes) cover, and
  // their kinds
  uint64_t overhead_ns = 0;
  std::set<std::string_view> overhead_kinds;
  // host-range from recurring long launch gaps: the host stalled in the range after it had
  // launched GPU work; the steady steps with such a gap, of how many.
  bool stalled_after_launch = false;
  std::set<int64_t> steps_hit;
  uint64_t steady_steps = 0;
  // Of such gaps, the part a wait before them took as catch-up: the stall's fix saves it too.
  uint64_t given_to_wait_ns = 0;
};

inline bool IsWaitRule(std::string_view rule) {
  return rule == kRuleSync || rule == kRuleBlockingRead || rule == kRuleBlockingCopy;
}

// The finding of a group: its cost, where, evidence and fix.
AdviseFinding FindingOf(const AdviseTimeline& timeline, const GapGroup& g);

// Where a gap happened and what the trace shows of the host then, for the one-off and
// start-up findings (advise_gap_place.cc).
struct GapPlace {
  std::string where;  // the line (call_sites.h) of the longest CUDA call during the gap, else
                      // of the launch that ended it; "" without stacks
  std::string path;   // the NVTX path the host was in halfway through the gap; "" outside any
  std::string text;   // "the longest, 61.08 ms, began 123.45 ms into the trace on thread ..."
};
// `thread_id`: the thread that launched the work ending the gap.
GapPlace PlaceOfGap(const AdviseTimeline& timeline, const Gap& gap, uint64_t thread_id);

}  // namespace warpscope::advise_internal

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_ADVISE_ADVISE_GAP_GROUPS_H_
