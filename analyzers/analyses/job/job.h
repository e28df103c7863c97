// The job view: the traces of all ranks of a data-parallel job read together. It matches each
// collective across the ranks (by communicator and order, collectives.h), splits the time
// each rank spends in it into waiting for the last rank and moving data, gives each step's
// compute, communication and their overlap per rank, and names the straggler (the rank the
// others wait for) with its evidence and its cause on that rank, or says plainly that the
// ranks are balanced. docs/distributed.md says how every figure is made.
//
// Waiting needs no clock alignment: the rank that arrives last at a collective spends the
// least time in it, so a rank's wait is its duration minus the shortest among the ranks, and
// its lateness the longest duration minus its own. Ranks on one host share a clock; there the
// last arrival is also found from the kernels' start times (`clock_*` columns) as a check.
// The time a rank *lost* waiting counts a run of back-to-back collectives once: while the
// first waits for a late rank, the next ones queue behind it and wait for the same rank.
//
// Memory: each trace is read in two passes as it streams by and reduced to a RankDigest
// (rank_digest.h); at most `threads` traces are read at once, so memory is about threads x (one
// rank's streaming state: its NVTX ranges, NCCL calls and memory events, and a bounded window of
// kernels and API calls, rank_stream.h) + the digests (collectives and steps of all ranks).
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_JOB_JOB_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_JOB_JOB_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/analyses/advise/advise.h"
#include "analyzers/analyses/advise/advise_sample.h"
#include "analyzers/analyses/job/rank_digest.h"
#include "analyzers/render/report.h"
#include "analyzers/render/report_scope.h"

namespace warpscope {

struct JobOptions {
  std::string step;    // the NVTX range that marks steps ("" = steps.h's rule)
  size_t threads = 0;  // traces read at once; 0 = the machine's cores
  bool short_names = false;  // the straggler's kernels short and distinct (--short-names)
  // The straggler's own `advise`, which names its finding, reads at most this many of its
  // timed events (its first steps within them, as `advise --max-events`).
  uint64_t max_events = kAdviseMaxEvents;
  // Keep each rank's compute stretches for the picture (JobSvg: `--svg`, `advise --html`);
  // without, a rank's digest keeps nothing per kernel stretch but the one before each collective.
  bool drawing = true;
};

// One collective instance across the ranks that ran it; its communicator and operation are
// views into the digests' names (RankDigest::names).
struct MatchedCollective {
  std::string_view comm;
  uint64_t seq = 0;
  std::string_view op;
  uint64_t bytes = 0;                 // the largest any rank reported
  uint32_t ranks = 0;                 // ranks that ran it
  uint64_t shortest_ns = 0;           // the last arrival's duration: the data movement
  uint64_t longest_ns = 0;
  // Arrived last: the shortest duration (AllReduce, AllGather, ReduceScatter, AlltoAll), for
  // other operations the latest start where the ranks share a clock; unknown otherwise.
  std::optional<uint32_t> last_rank;
  std::optional<uint32_t> clock_last_rank;  // latest kernel start, where clocks are shared
  uint64_t clock_spread_ns = 0;       // latest start minus earliest start (shared clocks)
  uint64_t spread_ns() const { return longest_ns - shortest_ns; }
};

// What made the straggler late (straggler_cause.cc).
enum class StragglerCause {
  kUnknown,  // no straggler, or its trace says nothing either way
  kHost,     // its host spends longer in one place per step than the others' hosts
  kGpu,      // its GPU work per step takes longer than the others'
  kLater,    // its GPU work starts later but takes no longer, and no host range explains it
};

struct StragglerVerdict {
  std::optional<uint32_t> rank;  // the straggler; none when balanced or no one rank dominates
  std::string verdict;           // one sentence: who, with the evidence, or that none is
  std::string cause;             // what the straggler did meanwhile (empty without one)
  std::string finding;           // its own `advise` finding that matches the cause, if any
  StragglerCause cause_kind = StragglerCause::kUnknown;
  // kHost: where its host spends the extra time (a RangeFamily of a path; "" = outside any NVTX
  // range), and how much more per step than the other ranks' median (median over steps).
  std::string cause_range;
  uint64_t cause_host_excess_ns = 0;
  uint64_t uneven_spread_ns = 0;  // the spread from which a collective counts as uneven
  uint32_t uneven = 0;           // instances whose arrivals differ by more than the threshold
  uint32_t last_count = 0;       // of those, where the straggler arrived last
  uint64_t median_lead_ns = 0;   // median time the others waited for it there
  // The time the others lost waiting for it (RankCollective::lost_ns at the collectives it
  // arrived last at; without a straggler, every rank's at every collective) over the whole
  // trace; the part in the steady state (JobView::warmup_steps), its share of their steady
  // step time (their GPU span without steps) and the steady steps of the others, summed.
  uint64_t others_lost_ns = 0;
  uint64_t others_steady_lost_ns = 0;
  double others_lost_share = 0;
  size_t others_steady_steps = 0;
};

struct JobView {
  std::vector<RankDigest> ranks;  // by rank
  std::vector<MatchedCollective> collectives;
  bool shared_clock = false;      // every trace from one host
  std::string job_id;             // when the traces say (header)
  uint32_t world_size = 0;
  std::vector<std::string> problems;  // ranks missing, sequences that differ, ...
  // Warm-up steps of the job: the most of any rank's (steps.h WarmupSteps). The ranks step
  // together, so the steady state starts after them on every rank (RankDigest::Warmup).
  size_t warmup_steps = 0;
  StragglerVerdict straggler;
  // Device memory per rank (job_memory.cc), with memory events: the median of the ranks' peaks
  // and the ranks whose peak differs from it by more than kMemoryPeakSpread (and 256 MiB),
  // each with a sentence.
  uint64_t median_peak_memory_bytes = 0;
  std::vector<uint32_t> memory_outliers;
  std::vector<std::string> memory_verdicts;
  // How the ranks ended, when not every one ended at its exit (job_ends.cc): which ended first
  // and how, and what each other rank did after it (the collectives it never joined).
  std::vector<std::string> end_verdicts;
};

// A rank's peak memory differs from the ranks' median by more than this share of it.
inline constexpr double kMemoryPeakSpread = 0.10;

// Reads the traces (files, folders or globs: model/trace_paths.h) and builds the view. Errors:
// a trace that cannot be read (the message names it), fewer than one trace.
absl::StatusOr<JobView> BuildJobView(const std::vector<std::string>& paths,
                                     const JobOptions& options = {});

// The view as a report: scalars (ranks, straggler, waiting), tables `ranks`, `collectives` (per
// operation and rank), `steps` (per rank and step), `instances` (each matched collective) and
// `rank_collectives` (per collective and rank). The last three grow with steps: their rows are
// made only when `scope` renders them (else they keep their columns only).
Report JobReport(const JobView& view, const ReportScope& scope = {});

// The ranks side by side, one row per rank on one time axis (the job's clock when the ranks
// share one, else each rank's own trace time lined up at its first matched collective): steps,
// compute and NCCL kernels, with the wait in each collective shaded. `steps`: how many steps
// from the middle of the job to draw (0 = all).
std::string JobSvg(const JobView& view, size_t steps = 3);

// `warpscope advise` of a job: the straggler finding (rule straggler: what it costs each
// other rank, why it is late, the fix) and the top `per_rank` findings of each rank's own
// advise (of the straggler and up to 16 ranks), with its collectives' waits measured against
// the other ranks (rule nccl-wait), in one list by cost; every finding names its job_rank.
// Reloads each advised rank's trace, one at a time.
absl::StatusOr<AdviseReport> BuildJobAdviseReport(const JobView& view, const AdviseOptions& options,
                                                  size_t per_rank = 5);

// Internal steps of BuildJobView, exposed for tests: matching and waiting (job_match.cc), the
// straggler rule (straggler.cc).
void MatchCollectives(JobView& view);
void JudgeStraggler(JobView& view);
// The ranks' peak memory against their median (job_memory.cc), and the `memory` table (one row
// per rank and device; only in a report whose ranks have memory events).
void JudgeMemory(JobView& view);
Table JobMemoryTable(const JobView& view);
// How the ranks ended (JobView::end_verdicts), and the `ends` table (one row per rank; only in a
// report with end verdicts).
void JudgeEnds(JobView& view);
Table JobEndsTable(const JobView& view);
// Names what the straggler did while the others waited, from its own trace read again: its
// NVTX ranges and the kernels in the stretches before its late arrivals, and its own `advise`
// within options.max_events; its kernels short and distinct over that trace's with
// options.short_names. Errors: those of reading the trace (the verdict's cause is then left
// as it was).
absl::Status ExplainStraggler(JobView& view, const JobOptions& options);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_JOB_JOB_H_
