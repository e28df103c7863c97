// The ranks side by side (job.h): per rank a row of its steps and a row of its NCCL
// collectives, each split into the wait for the last rank and the data movement.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/job/job.h"
#include "analyzers/render/output.h"
#include "analyzers/render/svg.h"

namespace warpscope {
namespace {

// Each rank's trace time on one clock, in ns: the epoch where the ranks share a host's clock;
// else rank 0's trace time, the others shifted so that a collective every rank ran ends at
// the same instant on all (a collective ends together everywhere: the data arrives at once).
std::vector<int64_t> Offsets(const JobView& view) {
  std::vector<int64_t> offsets(view.ranks.size(), 0);
  if (view.ranks.empty()) return offsets;
  if (view.shared_clock) {
    const uint64_t base = view.ranks.front().unix_time_base_ns;
    for (size_t i = 0; i < view.ranks.size(); ++i) {
      offsets[i] = static_cast<int64_t>(view.ranks[i].unix_time_base_ns - base);
    }
    return offsets;
  }
  for (const MatchedCollective& m : view.collectives) {
    if (m.ranks != view.ranks.size()) continue;
    std::vector<int64_t> ends;
    for (const RankDigest& r : view.ranks) {
      for (const RankCollective& c : r.collectives) {
        if (c.comm == m.comm && c.seq == m.seq) ends.push_back(static_cast<int64_t>(c.end_ns()));
      }
    }
    if (ends.size() != view.ranks.size()) continue;
    for (size_t i = 0; i < ends.size(); ++i) offsets[i] = ends[0] - ends[i];
    break;
  }
  return offsets;
}

}  // namespace

// Rows of three per rank: beyond this many ranks, the first ones and the straggler.
constexpr size_t kMaxRanksDrawn = 16;

std::string JobSvg(const JobView& view, size_t steps) {
  const std::vector<int64_t> offsets = Offsets(view);
  if (view.ranks.empty()) return "";
  // The window: `steps` steps from the middle of the first rank's, else its whole span.
  const RankDigest& first = view.ranks.front();
  int64_t begin = static_cast<int64_t>(first.gpu_begin_ns), end = static_cast<int64_t>(first.gpu_end_ns);
  const std::vector<Step>& s = first.steps.steps;
  if (!s.empty()) {
    const size_t count = steps == 0 ? s.size() : std::min(steps, s.size());
    const size_t from = (s.size() - count) / 2;
    begin = static_cast<int64_t>(s[from].start_ns);
    end = static_cast<int64_t>(s[from + count - 1].end_ns);
  }
  const uint64_t width = static_cast<uint64_t>(std::max<int64_t>(end - begin, 1));
  SvgTimeline::Options options;
  options.axis = true;
  options.legend = true;
  options.label_width = 130;
  options.names_in_boxes = true;
  SvgTimeline timeline(0, width, options);
  auto at = [&](size_t i, uint64_t t) -> uint64_t {
    const int64_t x = static_cast<int64_t>(t) + offsets[i] - begin;
    return static_cast<uint64_t>(std::clamp<int64_t>(x, 0, static_cast<int64_t>(width)));
  };
  size_t drawn = 0;
  for (size_t i = 0; i < view.ranks.size(); ++i) {
    const RankDigest& r = view.ranks[i];
    const bool straggler = view.straggler.rank == r.RankOrIndex();
    if (drawn >= kMaxRanksDrawn - (view.straggler.rank && !straggler ? 1 : 0) && !straggler) {
      continue;
    }
    ++drawn;
    const std::string row = absl::StrCat("rank ", r.RankOrIndex(), " NCCL");
    const std::string compute_row = absl::StrCat("rank ", r.RankOrIndex(), " compute");
    const std::string step_row = absl::StrCat("rank ", r.RankOrIndex(), " steps");
    timeline.AddRow(step_row);
    timeline.AddRow(compute_row);
    timeline.AddRow(row);
    for (const Step& st : r.steps.steps) {
      timeline.Add(step_row, at(i, st.start_ns), at(i, st.end_ns), "range", st.name, st.name);
    }
    for (const TimeInterval& t : r.compute_drawn) {
      if (at(i, t.end_ns) > 0 && at(i, t.begin_ns) < width) {
        timeline.Add(compute_row, at(i, t.begin_ns), at(i, t.end_ns), "kernel", "GPU work");
      }
    }
    for (const RankCollective& c : r.collectives) {
      const uint64_t a = at(i, c.start_ns), b = at(i, c.start_ns + c.wait_ns);
      const uint64_t e = at(i, c.end_ns());
      const std::string label = absl::StrFormat("%s %s #%d: %s, waited %s", std::string(c.op),
                                                std::string(c.comm), c.seq,
                                                FormatDuration(c.duration_ns),
                                                FormatDuration(c.wait_ns));
      const std::string name =
          absl::StrCat(std::string(c.op), " waits ", FormatDuration(c.wait_ns));
      if (b > a) timeline.Add(row, a, b, "nccl-wait", label, name);
      if (e > b) timeline.Add(row, b, e, "nccl", label, std::string(c.op));
    }
  }
  std::string caption = view.straggler.verdict;
  if (drawn < view.ranks.size()) {
    absl::StrAppend(&caption, " (", drawn, " of ", view.ranks.size(), " ranks drawn)");
  }
  return timeline.Render(
      absl::StrCat("warpscope job: ", view.ranks.size(), " ranks",
                   view.shared_clock ? " (one host's clock)" : " (aligned at a collective's end)"),
      caption);
}

}  // namespace warpscope
