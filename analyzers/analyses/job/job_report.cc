// The job view as a Report: scalars and the ranks, collectives, steps and instances tables
// (job.h; every column is described in docs/distributed.md).
#include <algorithm>
#include <map>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "analyzers/measures/collectives.h"
#include "analyzers/analyses/job/job.h"
#include "analyzers/measures/median.h"

namespace warpscope {
namespace {

Cell Ms(uint64_t ns) { return Cell(static_cast<double>(ns) / 1e6, 3); }

// A value only where it is known: an empty cell (null in JSON) otherwise.
Cell MsIf(bool known, uint64_t ns) {
  if (!known) return Cell();
  return Ms(ns);
}
Cell NumberIf(bool known, uint64_t n) {
  if (!known) return Cell();
  return Cell(n);
}
Cell GbPerS(uint64_t bytes, uint64_t ns) {
  if (ns == 0) return Cell();
  return Cell(static_cast<double>(bytes) / static_cast<double>(ns), 2);
}

std::string CauseKindName(StragglerCause kind) {
  switch (kind) {
    case StragglerCause::kHost: return "host";
    case StragglerCause::kGpu: return "gpu";
    case StragglerCause::kLater: return "later";
    case StragglerCause::kUnknown: break;
  }
  return "";
}

// Medians over each rank's steady steps (median_*), the steady steps' lost time over their
// time (lost_pct; of the GPU span without steps), and totals over the whole trace (total_*).
Table RanksTable(const JobView& view) {
  Table t({{"rank", true, CellKind::kInt},
           {"host", false, CellKind::kString},
           {"pid", true, CellKind::kInt},
           {"device", true, CellKind::kInt},
           {"gpu", false, CellKind::kString},
           {"steps", true, CellKind::kInt},
           {"warmup_steps", true, CellKind::kInt},
           {"median_step_ms", true, CellKind::kReal},
           {"median_compute_ms", true, CellKind::kReal},
           {"median_comm_ms", true, CellKind::kReal},
           {"median_exposed_comm_ms", true, CellKind::kReal},
           {"median_lost_ms", true, CellKind::kReal},
           {"lost_pct", true, CellKind::kReal},
           {"total_compute_ms", true, CellKind::kReal},
           {"total_comm_ms", true, CellKind::kReal},
           {"total_exposed_comm_ms", true, CellKind::kReal},
           {"total_wait_ms", true, CellKind::kReal},
           {"total_lost_ms", true, CellKind::kReal},
           {"last_arrivals", true, CellKind::kInt},
           {"collectives", true, CellKind::kInt},
           {"trace", false, CellKind::kString}});
  std::map<uint32_t, uint32_t> last;
  for (const MatchedCollective& m : view.collectives) {
    if (m.last_rank) ++last[*m.last_rank];
  }
  for (const RankDigest& r : view.ranks) {
    const size_t warmup = r.Warmup(view.warmup_steps);
    std::vector<uint64_t> step, compute, comm, exposed, step_lost;
    for (size_t i = warmup; i < r.step_times.size(); ++i) {
      const StepTimes& s = r.step_times[i];
      step.push_back(r.steps.steps[i].duration_ns());
      compute.push_back(s.compute_ns);
      comm.push_back(s.comm_ns);
      exposed.push_back(s.exposed_comm_ns());
      step_lost.push_back(s.lost_ns);
    }
    uint64_t wait = 0, lost = 0, steady_lost = 0;
    for (const RankCollective& c : r.collectives) {
      wait += c.wait_ns;
      lost += c.lost_ns;
      if (r.Steady(c, view.warmup_steps)) steady_lost += c.lost_ns;
    }
    const uint64_t steady_ns = r.SteadyNs(view.warmup_steps);
    const bool per_step = !step.empty();
    t.AddRow({r.RankOrIndex(), r.host, r.pid,
              NumberIf(r.device_id.has_value(), r.device_id.value_or(0)), r.device,
              static_cast<uint64_t>(r.steps.steps.size()), static_cast<uint64_t>(warmup),
              MsIf(per_step, MedianOf(step)), MsIf(per_step, MedianOf(compute)),
              MsIf(per_step, MedianOf(comm)), MsIf(per_step, MedianOf(exposed)),
              MsIf(per_step, MedianOf(step_lost)),
              PercentCell(steady_ns > 0 ? static_cast<double>(steady_lost) / steady_ns : 0.0),
              Ms(r.compute_ns), Ms(r.comm_ns), Ms(r.comm_ns - r.overlap_ns), Ms(wait), Ms(lost),
              last[r.RankOrIndex()], static_cast<uint64_t>(r.collectives.size()), r.path});
  }
  return t;
}

// What the ranks table's columns are over, for the text form.
std::string RanksTableKey(const JobView& view) {
  if (view.ranks.empty() || view.ranks.front().steps.steps.empty()) {
    return "ranks: no steps: total_* over the whole trace; lost_pct: lost time over the GPU "
           "span";
  }
  return absl::StrCat("ranks: median_* per step over the steady steps (after ",
                      view.warmup_steps, " warm-up step", view.warmup_steps == 1 ? "" : "s",
                      "); lost_pct: the steady steps' lost time over their time; total_* over "
                      "the whole trace");
}

// Per operation and rank: count, bytes, time, wait and the data movement's bus bandwidth.
Table CollectivesTable(const JobView& view) {
  Table t({{"op", false, CellKind::kString},
           {"rank", true, CellKind::kInt},
           {"count", true, CellKind::kInt},
           {"bytes", true, CellKind::kInt},
           {"time_ms", true, CellKind::kReal},
           {"wait_ms", true, CellKind::kReal},
           {"transfer_ms", true, CellKind::kReal},
           {"busbw_gbps", true, CellKind::kReal},
           {"last_arrivals", true, CellKind::kInt}});
  struct Sums {
    uint64_t count = 0, bytes = 0, time = 0, wait = 0, moved = 0, moved_time = 0, last = 0;
  };
  std::map<std::pair<std::string_view, uint32_t>, Sums> sums;
  std::map<std::pair<std::string_view, uint64_t>, const MatchedCollective*> by_key;
  for (const MatchedCollective& m : view.collectives) by_key[{m.comm, m.seq}] = &m;
  for (const RankDigest& r : view.ranks) {
    for (const RankCollective& c : r.collectives) {
      Sums& s = sums[{c.op, r.RankOrIndex()}];
      ++s.count;
      s.bytes += c.bytes;
      s.time += c.duration_ns;
      s.wait += c.wait_ns;
      auto m = by_key.find({c.comm, c.seq});
      const uint32_t n = m != by_key.end() ? m->second->ranks : std::max<int32_t>(c.comm_size, 1);
      if (m != by_key.end() && m->second->last_rank == r.RankOrIndex() && n > 1) ++s.last;
      if (c.bytes > 0) {
        s.moved += static_cast<uint64_t>(c.bytes * BusBandwidthFactor(c.op, n));
        s.moved_time += c.duration_ns - c.wait_ns;
      }
    }
  }
  for (const auto& [key, s] : sums) {
    t.AddRow({std::string(key.first), key.second, s.count, s.bytes, Ms(s.time), Ms(s.wait),
              Ms(s.time - s.wait), GbPerS(s.moved, s.moved_time), s.last});
  }
  return t;
}

// `rows`: with its rows (else its columns only), as for InstancesTable and
// RankCollectivesTable.
Table StepsTable(const JobView& view, bool rows) {
  Table t({{"rank", true, CellKind::kInt},
           {"step", true, CellKind::kInt},
           {"name", false, CellKind::kString},
           {"start_ms", true, CellKind::kReal},
           {"duration_ms", true, CellKind::kReal},
           {"compute_ms", true, CellKind::kReal},
           {"comm_ms", true, CellKind::kReal},
           {"overlap_ms", true, CellKind::kReal},
           {"exposed_comm_ms", true, CellKind::kReal},
           {"wait_ms", true, CellKind::kReal},
           {"lost_ms", true, CellKind::kReal},
           {"steady", false, CellKind::kBool}});
  if (!rows) return t;
  for (const RankDigest& r : view.ranks) {
    for (size_t i = 0; i < r.step_times.size(); ++i) {
      const Step& s = r.steps.steps[i];
      const StepTimes& x = r.step_times[i];
      t.AddRow({r.RankOrIndex(), Cell(s.number.value_or(i)),
                s.name, Ms(s.start_ns), Ms(s.duration_ns()), Ms(x.compute_ns), Ms(x.comm_ns),
                Ms(x.overlap_ns), Ms(x.exposed_comm_ns()), Ms(x.wait_ns), Ms(x.lost_ns),
                Cell::Bool(i >= r.Warmup(view.warmup_steps))});
    }
  }
  return t;
}

Table InstancesTable(const JobView& view, bool rows) {
  Table t({{"comm", false, CellKind::kString},
           {"seq", true, CellKind::kInt},
           {"op", false, CellKind::kString},
           {"bytes", true, CellKind::kInt},
           {"ranks", true, CellKind::kInt},
           {"transfer_ms", true, CellKind::kReal},
           {"spread_ms", true, CellKind::kReal},
           {"last_rank", true, CellKind::kInt},
           {"clock_last_rank", true, CellKind::kInt},
           {"clock_spread_ms", true, CellKind::kReal}});
  if (!rows) return t;
  for (const MatchedCollective& m : view.collectives) {
    t.AddRow({std::string(m.comm), m.seq, std::string(m.op), m.bytes, m.ranks,
              Ms(m.shortest_ns), Ms(m.spread_ns()),
              NumberIf(m.last_rank.has_value(), m.last_rank.value_or(0)),
              NumberIf(m.clock_last_rank.has_value(), m.clock_last_rank.value_or(0)),
              MsIf(view.shared_clock, m.clock_spread_ns)});
  }
  return t;
}

// Every collective of every rank: for Parquet, DuckDB and DataFrames (large: ranks x
// collectives), times in ns of the rank's own trace.
Table RankCollectivesTable(const JobView& view, bool rows) {
  Table t({{"rank", true, CellKind::kInt},
           {"comm", false, CellKind::kString},
           {"seq", true, CellKind::kInt},
           {"op", false, CellKind::kString},
           {"bytes", true, CellKind::kInt},
           {"step", true, CellKind::kInt},
           {"start_ns", true, CellKind::kInt},
           {"duration_ns", true, CellKind::kReal},
           {"wait_ns", true, CellKind::kInt},
           {"lost_ns", true, CellKind::kInt},
           {"arrived_last", true, CellKind::kInt}});
  if (!rows) return t;
  std::map<std::pair<std::string_view, uint64_t>, const MatchedCollective*> by_key;
  for (const MatchedCollective& m : view.collectives) by_key[{m.comm, m.seq}] = &m;
  for (const RankDigest& r : view.ranks) {
    for (const RankCollective& c : r.collectives) {
      auto m = by_key.find({c.comm, c.seq});
      const bool matched = m != by_key.end() && m->second->last_rank.has_value();
      // The step as the steps table names it: its number, else its position.
      const bool in_step = c.step >= 0 && static_cast<size_t>(c.step) < r.steps.steps.size();
      const int64_t step =
          in_step ? static_cast<int64_t>(r.steps.steps[static_cast<size_t>(c.step)].number.value_or(
                        static_cast<uint64_t>(c.step)))
                  : c.step;
      t.AddRow({r.RankOrIndex(), std::string(c.comm), c.seq, std::string(c.op), c.bytes, step,
                c.start_ns, c.duration_ns, c.wait_ns, c.lost_ns,
                NumberIf(matched, matched && *m->second->last_rank == r.RankOrIndex() ? 1 : 0)});
    }
  }
  return t;
}

}  // namespace

Report JobReport(const JobView& view, const ReportScope& scope) {
  Report report;
  const StragglerVerdict& v = view.straggler;
  const std::string steps_how = view.ranks.empty() ? "" : view.ranks.front().steps.how;
  report.scalars = {
      {"ranks", static_cast<uint64_t>(view.ranks.size())},
      {"world_size", view.world_size},
      {"job_id", view.job_id},
      {"shared_clock", view.shared_clock ? "yes" : "no"},
      {"steps", steps_how},
      {"warmup_steps", static_cast<uint64_t>(view.warmup_steps)},
      {"collectives_matched", static_cast<uint64_t>(view.collectives.size())},
      {"straggler", NumberIf(v.rank.has_value(), v.rank.value_or(0))},
      {"uneven_collectives", v.uneven},
      {"straggler_last_arrivals", v.last_count},
      {"straggler_median_lead_ms", Ms(v.median_lead_ns)},
      {"lost_ms", Ms(v.others_lost_ns)},
      {"steady_lost_ms", Ms(v.others_steady_lost_ns)},
      {"lost_pct", PercentCell(v.others_lost_share)},
      {"verdict", v.verdict},
      {"cause", v.cause},
      {"cause_kind", CauseKindName(v.cause_kind)},
      {"cause_range", v.cause_kind == StragglerCause::kHost ? v.cause_range : ""},
      {"cause_host_excess_ms", Ms(v.cause_host_excess_ns)},
      {"finding", v.finding},
  };
  report.text.push_back(v.verdict);
  if (!v.cause.empty()) report.text.push_back(absl::StrCat("  cause: ", v.cause));
  if (!v.finding.empty()) report.text.push_back(absl::StrCat("  see:   ", v.finding));
  report.text.push_back(absl::StrCat(view.ranks.size(), " ranks", view.shared_clock ? " on one host" : "",
                                     "; ", view.collectives.size(), " collectives matched; steps: ",
                                     steps_how));
  for (const std::string& p : view.problems) report.text.push_back(absl::StrCat("note: ", p));
  for (const std::string& m : view.memory_verdicts) report.text.push_back(m);
  for (const std::string& e : view.end_verdicts) report.text.push_back(e);
  report.text.push_back(RanksTableKey(view));
  report.tables.emplace_back("ranks", RanksTable(view));
  report.tables.emplace_back("collectives", CollectivesTable(view));
  // Not in the text form: made only for CSV, JSON, --table and Python.
  auto rows = [&](std::string_view name) { return scope.Renders(name, false); };
  report.tables.emplace_back("steps", StepsTable(view, rows("steps")));
  report.tables.emplace_back("instances", InstancesTable(view, rows("instances")));
  report.tables.emplace_back("rank_collectives",
                             RankCollectivesTable(view, rows("rank_collectives")));
  Table problems({{"problem", false, CellKind::kString}});
  for (const std::string& p : view.problems) problems.AddRow({p});
  report.tables.emplace_back("problems", std::move(problems));
  report.text_tables = {"ranks", "collectives"};
  if (!view.end_verdicts.empty()) report.tables.emplace_back("ends", JobEndsTable(view));
  Table memory = JobMemoryTable(view);
  if (memory.num_rows() > 0) {
    report.tables.emplace_back("memory", std::move(memory));
    report.text_tables.push_back("memory");
  }
  return report;
}

}  // namespace warpscope
