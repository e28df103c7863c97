// Reading a job's traces in parallel into rank digests, then matching, judging and explaining
// (job.h).
#include "analyzers/analyses/job/job.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzers/model/trace_paths.h"

namespace warpscope {
namespace {

// Digests every file, `threads` at a time (each streaming one trace); the first error stops
// the job.
absl::StatusOr<std::vector<RankDigest>> DigestAll(const std::vector<std::string>& files,
                                                  const JobOptions& options) {
  size_t threads = options.threads;
  if (threads == 0) threads = std::max<size_t>(std::thread::hardware_concurrency(), 1);
  threads = std::min(threads, files.size());
  std::vector<RankDigest> digests(files.size());
  std::vector<absl::Status> errors(files.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      absl::StatusOr<RankDigest> digest =
          DigestRankFile(files[i], static_cast<uint32_t>(i), options.step,
                         options.drawing);
      if (!digest.ok()) {
        errors[i] = digest.status();
        continue;
      }
      digests[i] = *std::move(digest);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (size_t i = 0; i < files.size(); ++i) {
    if (!errors[i].ok()) {
      return absl::Status(errors[i].code(), absl::StrCat(files[i], ": ", errors[i].message()));
    }
  }
  return digests;
}

// Ranks in order, and what is odd about the set: the same rank twice, ranks missing.
void OrderRanks(JobView& view) {
  std::sort(view.ranks.begin(), view.ranks.end(), [](const RankDigest& a, const RankDigest& b) {
    return std::make_pair(a.RankOrIndex(), a.index) < std::make_pair(b.RankOrIndex(), b.index);
  });
  std::set<uint32_t> seen;
  std::set<std::string> hosts;
  size_t unknown = 0;
  view.shared_clock = true;
  for (const RankDigest& r : view.ranks) {
    view.world_size = std::max(view.world_size, r.world_size);
    if (!r.rank) ++unknown;
    if (!seen.insert(r.RankOrIndex()).second) {
      view.problems.push_back(absl::StrCat("two traces say rank ", r.RankOrIndex(), " (",
                                           r.path, "); give one trace per rank"));
    }
    hosts.insert(r.host);
    view.shared_clock = view.shared_clock && r.unix_time_base_ns != 0;
    if (!r.truncated.empty()) {
      view.problems.push_back(absl::StrCat("rank ", r.RankOrIndex(), " (", r.path,
                                           ") was cut short: ", r.truncated));
    }
  }
  view.shared_clock = view.shared_clock && hosts.size() == 1;
  if (unknown > 0) {
    view.problems.push_back(absl::StrCat(
        unknown, " trace(s) say no rank (no RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID "
                 "in their environment): numbered by their order on the command line"));
  }
  if (view.world_size == 0) view.world_size = static_cast<uint32_t>(view.ranks.size());
  std::vector<std::string> missing;
  for (uint32_t r = 0; r < view.world_size && missing.size() < 16; ++r) {
    if (seen.count(r) == 0) missing.push_back(absl::StrCat(r));
  }
  if (!missing.empty()) {
    view.problems.push_back(absl::StrCat("no trace of rank(s) ", absl::StrJoin(missing, ", "),
                                         " of ", view.world_size,
                                         ": their waiting is not counted"));
  }
}

}  // namespace

absl::StatusOr<JobView> BuildJobView(const std::vector<std::string>& paths,
                                     const JobOptions& options) {
  absl::StatusOr<std::vector<std::string>> files = ExpandTracePaths(paths);
  if (!files.ok()) return files.status();
  absl::StatusOr<std::vector<RankDigest>> digests = DigestAll(*files, options);
  if (!digests.ok()) return digests.status();
  JobView view;
  view.ranks = std::move(*digests);
  OrderRanks(view);
  for (const RankDigest& r : view.ranks) {
    view.warmup_steps = std::max(view.warmup_steps, WarmupSteps(r.steps));
  }
  MatchCollectives(view);
  JudgeStraggler(view);
  JudgeMemory(view);
  JudgeEnds(view);
  if (view.straggler.rank) {
    // Unexplained when its trace cannot be read again, as the job's other figures stand.
    const StragglerVerdict judged = view.straggler;
    if (!ExplainStraggler(view, options).ok()) view.straggler = judged;
  }
  return view;
}

}  // namespace warpscope
