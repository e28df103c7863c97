// `warpscope advise` of a job (job.h): the straggler finding and each rank's own findings,
// with every collective's wait measured against the other ranks, in one list by cost per
// steady step (the steps after the job's warm-up, the same on every rank), so that the job's
// finding comes first when it costs the most. A rank's waiting for the named straggler is that
// finding's cost (each other rank's mean), not a finding of its own.
#include <algorithm>
#include <cstdint>
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

// The job's own finding: what the straggler costs each other rank, and why it is late; per
// steady step, the others' mean loss there.
AdviseFinding StragglerFinding(const JobView& view, uint64_t median_span_ns) {
  const StragglerVerdict& v = view.straggler;
  AdviseFinding f;
  f.rule = std::string(kRuleStraggler);
  f.job_rank = *v.rank;
  for (const RankDigest& r : view.ranks) {
    if (r.RankOrIndex() == *v.rank && r.device_id) f.device_id = *r.device_id;
  }
  const size_t others = view.ranks.size() > 1 ? view.ranks.size() - 1 : 1;
  f.cost_ns = v.others_lost_ns / others;
  if (v.others_steady_steps > 0) {
    f.cost_per_step_ns = v.others_steady_lost_ns / v.others_steady_steps;
    f.step_fraction = v.others_lost_share;  // over the others' steady step time, as `job` says
  }
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

}  // namespace

absl::StatusOr<AdviseReport> BuildJobAdviseReport(const JobView& view, const AdviseOptions& options,
                                                  size_t per_rank) {
  AdviseReport job;
  job.label = absl::StrCat("job of ", view.ranks.size(), " ranks");
  std::vector<uint64_t> spans, steady_steps;
  std::set<std::string> notes;
  size_t fewest_steady = SIZE_MAX;
  for (const RankDigest* r : RanksToAdvise(view)) {
    absl::StatusOr<TraceModel> model = TraceModel::Load(r->path);
    if (!model.ok()) return absl::Status(model.status().code(), absl::StrCat(r->path, ": ", model.status().message()));
    const MeasuredCollectiveWaits waits = MeasuredWaits(view, *r);
    AdviseOptions o = options;
    o.top = 0;  // per_rank is applied to the steady and the one-time findings apart
    o.collective_waits = &waits;
    o.warmup_steps = view.warmup_steps;
    AdviseReport rank = BuildAdviseReport(*model, r->path, o);
    if (job.steps == 0) {
      job.steps = rank.steps;
      job.warmup_steps = rank.warmup_steps;
      job.step_rule = rank.step_rule;
    }
    fewest_steady = std::min(fewest_steady, rank.steady_steps);
    steady_steps.push_back(rank.steady_step_ns);
    const bool straggler = view.straggler.rank == r->RankOrIndex();
    size_t kept[2] = {0, 0};  // steady, one-time
    for (AdviseFinding& f : rank.findings) {
      // Waiting for the named straggler is the straggler finding's cost, not this rank's.
      if (f.rule == kRuleCollectiveWait && waits.waited_for) continue;
      if (!IsMemoryRule(f.rule) && per_rank > 0 && ++kept[f.one_time ? 1 : 0] > per_rank) continue;
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
  // Costs per step when every advised rank has steady steps (their steps are the job's).
  job.steady_steps = fewest_steady == SIZE_MAX ? 0 : fewest_steady;
  job.steady_step_ns = job.steady_steps > 0 ? MedianOf(std::move(steady_steps)) : 0;
  if (job.steady_steps == 0) {
    for (AdviseFinding& f : job.findings) f.cost_per_step_ns = 0;  // ranked by cost alone
  }
  if (view.straggler.rank) {
    AdviseFinding f = StragglerFinding(view, median_span);
    f.severity = SeverityOf(HasCostPerStep(job, f) ? f.step_fraction : f.cost_fraction, options);
    job.findings.push_back(std::move(f));
  }
  std::stable_sort(job.findings.begin(), job.findings.end(), RankedBefore);
  // Memory findings cost bytes, not time: after the others, every one, as in a trace's advise.
  const auto memory = std::stable_partition(
      job.findings.begin(), job.findings.end(),
      [](const AdviseFinding& f) { return !IsMemoryRule(f.rule); });
  if (options.top > 0 && memory - job.findings.begin() > static_cast<ptrdiff_t>(options.top)) {
    job.findings.erase(job.findings.begin() + static_cast<ptrdiff_t>(options.top), memory);
  }
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
                            f.job_rank, f.rule, CostText(job, f));
    }
  }
  return job;
}

}  // namespace warpscope
