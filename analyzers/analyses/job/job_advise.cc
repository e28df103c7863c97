// `warpscope advise` of a job (job.h): the straggler finding and each rank's own findings,
// with every collective's wait measured against the other ranks, in one list by cost, so that
// the job's finding comes first when it costs the most. A rank's waiting for the named
// straggler is that finding's cost (each other rank's mean), not a finding of its own.
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/job/job.h"
#include "analyzers/measures/median.h"

namespace warpscope {
namespace {

// Beyond this many ranks, only the straggler and the first ranks get their own advise.
constexpr size_t kMaxRanksAdvised = 16;

MeasuredCollectiveWaits MeasuredWaits(const JobView& view, const RankDigest& r) {
  MeasuredCollectiveWaits m;
  for (const RankCollective& c : r.collectives) m.wait_by_kernel[c.kernel_index] = c.wait_ns;
  if (view.straggler.rank && *view.straggler.rank != r.RankOrIndex()) {
    m.waited_for = view.straggler.rank;
  }
  return m;
}

// The job's own finding: what the straggler costs each other rank, and why it is late.
AdviseFinding StragglerFinding(const JobView& view, uint64_t median_span_ns) {
  const StragglerVerdict& v = view.straggler;
  AdviseFinding f;
  f.rule = std::string(kRuleStraggler);
  f.job_rank = *v.rank;
  const size_t others = view.ranks.size() > 1 ? view.ranks.size() - 1 : 1;
  f.cost_ns = v.others_lost_ns / others;
  f.occurrences = v.last_count;
  f.title = absl::StrFormat("rank %d arrives last at the collectives: each other rank loses %s "
                            "waiting for it",
                            *v.rank, FormatDuration(static_cast<double>(f.cost_ns)));
  if (v.cause_kind == StragglerCause::kHost) f.nvtx_path = v.cause_range;
  f.evidence = absl::StrCat(v.verdict, " ", v.cause,
                            v.finding.empty() ? "" : absl::StrCat(" (", v.finding, ")"));
  const bool gpu = v.cause_kind == StragglerCause::kGpu;
  f.fix = gpu ? absl::StrCat("Rank ", *v.rank,
                             "'s GPU work takes longer than the others': give it less work, or "
                             "find why the same kernels run slower on it (clocks, another "
                             "process on its GPU, a different batch shape).")
              : absl::StrCat("Take ",
                             f.nvtx_path.empty() ? std::string("the host work") : f.nvtx_path,
                             " off rank ", *v.rank,
                             "'s critical path (prefetch its data with DataLoader workers, move "
                             "the host work to a background thread), or balance it across ranks.");
  f.cost_fraction = static_cast<double>(f.cost_ns) / static_cast<double>(std::max<uint64_t>(median_span_ns, 1));
  return f;
}

std::vector<const RankDigest*> RanksToAdvise(const JobView& view) {
  std::vector<const RankDigest*> out;
  for (const RankDigest& r : view.ranks) {
    if (view.straggler.rank == r.RankOrIndex()) out.insert(out.begin(), &r);
  }
  for (const RankDigest& r : view.ranks) {
    if (out.size() >= kMaxRanksAdvised) break;
    if (view.straggler.rank != r.RankOrIndex()) out.push_back(&r);
  }
  return out;
}

AdviseSeverity SeverityOf(double fraction, const AdviseOptions& options) {
  if (fraction >= options.high_fraction) return AdviseSeverity::kHigh;
  if (fraction >= options.medium_fraction) return AdviseSeverity::kMedium;
  return AdviseSeverity::kLow;
}

}  // namespace

absl::StatusOr<AdviseReport> BuildJobAdviseReport(const JobView& view, const AdviseOptions& options,
                                                  size_t per_rank) {
  AdviseReport job;
  job.label = absl::StrCat("job of ", view.ranks.size(), " ranks");
  std::vector<uint64_t> spans;
  std::set<std::string> notes;
  for (const RankDigest* r : RanksToAdvise(view)) {
    absl::StatusOr<TraceModel> model = TraceModel::Load(r->path);
    if (!model.ok()) return absl::Status(model.status().code(), absl::StrCat(r->path, ": ", model.status().message()));
    const MeasuredCollectiveWaits waits = MeasuredWaits(view, *r);
    AdviseOptions o = options;
    o.top = per_rank;
    o.collective_waits = &waits;
    AdviseReport rank = BuildAdviseReport(*model, r->path, o);
    const bool straggler = view.straggler.rank == r->RankOrIndex();
    for (AdviseFinding& f : rank.findings) {
      // Waiting for the named straggler is the straggler finding's cost, not this rank's.
      if (f.rule == kRuleCollectiveWait && waits.waited_for) continue;
      f.job_rank = r->RankOrIndex();
      // Only the straggler's worst stretches are drawn (from its trace, on the HTML page).
      if (!straggler) f.worst_begin_ns = f.worst_end_ns = 0;
      job.findings.push_back(std::move(f));
    }
    for (const std::string& n : rank.notes) notes.insert(n);
    spans.push_back(rank.gpu_span_ns);
    job.gpu_busy_ns += rank.gpu_busy_ns;
    job.collective_wait_ns += rank.collective_wait_ns;
    job.gpu_span_ns = std::max(job.gpu_span_ns, rank.gpu_span_ns);
    job.wall_ns = std::max(job.wall_ns, rank.wall_ns);
  }
  const uint64_t median_span = MedianOf(std::move(spans));
  if (view.straggler.rank) {
    AdviseFinding f = StragglerFinding(view, median_span);
    f.severity = SeverityOf(f.cost_fraction, options);
    job.findings.push_back(std::move(f));
  }
  std::stable_sort(job.findings.begin(), job.findings.end(),
                   [](const AdviseFinding& a, const AdviseFinding& b) {
                     const bool a_once = a.rule == kRuleStartup, b_once = b.rule == kRuleStartup;
                     return std::tie(a_once, b.cost_ns) < std::tie(b_once, a.cost_ns);
                   });
  if (options.top > 0 && job.findings.size() > options.top) job.findings.resize(options.top);
  job.notes.assign(notes.begin(), notes.end());
  for (const std::string& p : view.problems) job.notes.push_back(p);
  const size_t advised = RanksToAdvise(view).size();
  if (advised < view.ranks.size()) {
    job.notes.push_back(absl::StrCat("own findings of ", advised, " of ", view.ranks.size(),
                                     " ranks (the straggler and the first ones); `warpscope advise "
                                     "RANK.wst` gives any rank's"));
  }
  job.headline = absl::StrCat(job.label, ": ", view.straggler.verdict);
  if (!job.findings.empty()) {
    absl::StrAppend(&job.headline, " Top:");
    for (size_t i = 0; i < job.findings.size() && i < 3; ++i) {
      const AdviseFinding& f = job.findings[i];
      absl::StrAppendFormat(&job.headline, "%s %d) rank %d %s %s", i == 0 ? "" : ";", i + 1,
                            f.job_rank, f.rule, FormatDuration(static_cast<double>(f.cost_ns)));
    }
  }
  return job;
}

}  // namespace warpscope
