// Checks a PM-sampling trace of one ws_pm_repro mode against the CUDA occupancy API's answer
// (the repro's JSON) and Nsight Compute's figures: theoretical occupancy equal, achieved
// within 5 points, designed tail found within 10 points, balanced kernel without verdict.
//
//   ws_gpu_pm_check --trace T.wst --expect MODE.json [--ncu NCU.csv] [--row ROW.csv]
//   ws_gpu_pm_check --trace T.wst --counts   (kernels, PM samples, PC batches, pm_sampling.*
//                                             counters and notices; for coexistence runs)
//
// Prints one PASS/FAIL line per check; exit status = number of failed checks.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "analyzers/analyses/occupancy.h"
#include "analyzers/analyses/tail.h"
#include "analyzers/model/trace_model.h"

namespace {

int failures = 0;

void Check(bool ok, const std::string& name, const std::string& detail) {
  std::printf("%s %s %s\n", ok ? "PASS" : "FAIL", name.c_str(), detail.c_str());
  if (!ok) ++failures;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Value of "key" in a flat JSON object (numbers and strings without escapes).
std::string JsonField(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  size_t pos = json.find(needle);
  if (pos == std::string::npos) return "";
  pos += needle.size();
  while (pos < json.size() && json[pos] == ' ') ++pos;
  if (pos < json.size() && json[pos] == '"') {
    const size_t end = json.find('"', pos + 1);
    return json.substr(pos + 1, end - pos - 1);
  }
  size_t end = pos;
  while (end < json.size() && json[end] != ',' && json[end] != '}') ++end;
  return json.substr(pos, end - pos);
}

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// Mean of `metric` over the rows of an `ncu --csv` report whose kernel name contains `kernel`.
double NcuMetric(const std::string& csv, const std::string& kernel, const std::string& metric) {
  std::istringstream in(csv);
  std::string line;
  int name_col = -1, value_col = -1, kernel_col = -1;
  double sum = 0;
  int n = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> cells = SplitCsvLine(line);
    if (name_col < 0) {
      for (size_t i = 0; i < cells.size(); ++i) {
        if (cells[i] == "Metric Name") name_col = static_cast<int>(i);
        if (cells[i] == "Metric Value") value_col = static_cast<int>(i);
        if (cells[i] == "Kernel Name") kernel_col = static_cast<int>(i);
      }
      continue;
    }
    if (static_cast<int>(cells.size()) <= std::max({name_col, value_col, kernel_col})) continue;
    if (cells[name_col] != metric) continue;
    if (kernel_col >= 0 && cells[kernel_col].find(kernel) == std::string::npos) continue;
    std::string v = cells[value_col];
    v.erase(std::remove(v.begin(), v.end(), ','), v.end());
    sum += std::atof(v.c_str());
    ++n;
  }
  return n > 0 ? sum / n : NAN;
}

struct Flags {
  std::string trace, expect, ncu, row;
  bool counts = false;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--counts") f.counts = true;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--counts") {
      --i;
      continue;
    }
    if (flag == "--trace")
      f.trace = argv[i + 1];
    else if (flag == "--expect")
      f.expect = argv[i + 1];
    else if (flag == "--ncu")
      f.ncu = argv[i + 1];
    else if (flag == "--row")
      f.row = argv[i + 1];
  }
  return f;
}

// --counts: what a coexistence run produced, without checks.
int PrintCounts(const std::string& trace) {
  absl::StatusOr<warpscope::TraceModel> m = warpscope::TraceModel::Load(trace);
  if (!m.ok()) {
    std::printf("load failed: %s\n", std::string(m.status().message()).c_str());
    return 1;
  }
  std::printf("kernels=%zu pm_samples=%zu pm_metric_sets=%zu pc_batches=%zu truncated=%d\n",
              m->kernels.size(), m->pm_samples.size(), m->pm_metric_sets.size(),
              m->pc_sample_batches.size(), m->truncation.truncated() ? 1 : 0);
  for (const warpscope::StatCounter& c : m->stats) {
    if (c.name.rfind("pm_sampling", 0) == 0 || c.name.rfind("pc_sampling", 0) == 0 ||
        c.name.find("collector") != std::string::npos) {
      std::printf("counter %s=%llu\n", c.name.c_str(), static_cast<unsigned long long>(c.value));
    }
  }
  for (const warpscope::Notice& n : m->notices) {
    std::printf("notice [%s] %s\n", n.source.c_str(), n.message.c_str());
  }
  return 0;
}

// The repro's JSON: its mode, kernel and the occupancy API's answer.
struct Expectation {
  std::string mode, kernel;
  int api_blocks = 0;
  double api_pct = 0, designed_tail = 0;
};

// The figures compared, and written to the --row CSV.
struct Figures {
  double ours_theoretical = NAN, ours_achieved = NAN;
  double ours_achieved_low = NAN, ours_achieved_high = NAN;  // the bounds (occupancy.h)
  int ours_blocks = -1;
  double ncu_theoretical = NAN, ncu_achieved = NAN;
  double tail_fraction = NAN, coverage = NAN;
  std::string verdict = "n/a";
};

void CheckTheoretical(const warpscope::PmInputs& in, const Expectation& e, Figures* f) {
  const std::string& mode = e.mode;
  const std::string& kernel = e.kernel;
  warpscope::OccupancyReportOptions occ_options;
  occ_options.kernel_regex = kernel;
  auto occ = warpscope::BuildOccupancyReport(in, occ_options);
  const warpscope::OccupancyRow* r = nullptr;
  if (occ.ok()) {
    for (const warpscope::OccupancyRow& candidate : occ->rows) {
      if (r == nullptr || candidate.launches > r->launches) r = &candidate;
    }
  }
  if (r == nullptr || !r->theoretical) {
    Check(false, mode + "/theoretical", "no theoretical occupancy for " + kernel);
  } else {
    f->ours_blocks = r->theoretical->blocks_per_sm;
    f->ours_theoretical = 100 * r->theoretical->occupancy;
    char detail[256];
    std::snprintf(detail, sizeof detail,
                  "warpscope %d blocks/SM (%.2f%%, %s), occupancy API %d (%.2f%%)", f->ours_blocks,
                  f->ours_theoretical, warpscope::LimiterNames(r->theoretical->limiters).c_str(),
                  e.api_blocks, e.api_pct);
    Check(f->ours_blocks == e.api_blocks, mode + "/theoretical_vs_api", detail);
    f->ours_achieved = 100 * r->achieved;
    f->ours_achieved_low = 100 * r->achieved_low;
    f->ours_achieved_high = 100 * r->achieved_high;
  }
}

void CheckAgainstNcu(const std::string& ncu, const Expectation& e, Figures* f) {
  const std::string& mode = e.mode;
  if (ncu.empty()) {
    std::printf("SKIP %s/ncu no Nsight Compute CSV given\n", mode.c_str());
    return;
  }
  const std::string csv = ReadFile(ncu);
  f->ncu_theoretical = NcuMetric(csv, e.kernel, "sm__maximum_warps_per_active_cycle_pct");
  f->ncu_achieved = NcuMetric(csv, e.kernel, "sm__warps_active.avg.pct_of_peak_sustained_active");
  char detail[256];
  std::snprintf(detail, sizeof detail, "warpscope %.2f%%, Nsight Compute %.2f%%",
                f->ours_theoretical, f->ncu_theoretical);
  Check(std::fabs(f->ours_theoretical - f->ncu_theoretical) < 0.5, mode + "/theoretical_vs_ncu",
        detail);
  std::snprintf(detail, sizeof detail, "warpscope %.2f%%, Nsight Compute %.2f%% (limit 5 points)",
                f->ours_achieved, f->ncu_achieved);
  Check(std::fabs(f->ours_achieved - f->ncu_achieved) <= 5.0, mode + "/achieved_vs_ncu", detail);
  // The bounds must hold Nsight Compute's figure (0.5 points for its rounding and replay).
  std::snprintf(detail, sizeof detail, "warpscope bounds [%.2f, %.2f]%%, Nsight Compute %.2f%%",
                f->ours_achieved_low, f->ours_achieved_high, f->ncu_achieved);
  Check(f->ours_achieved_low - 0.5 <= f->ncu_achieved &&
            f->ncu_achieved <= f->ours_achieved_high + 0.5,
        mode + "/achieved_bounds_hold_ncu", detail);
}

void CheckTail(const warpscope::PmInputs& in, const Expectation& e, Figures* f) {
  const std::string& mode = e.mode;
  warpscope::TailReportOptions tail_options;
  tail_options.kernel_regex = e.kernel;
  tail_options.instances = true;  // every launch's curve, for the mean coverage below
  auto tail = warpscope::BuildTailReportFiltered(in, tail_options);
  if (!tail.ok() || tail->summaries.empty()) {
    Check(false, mode + "/tail", "no tail summary for " + e.kernel);
    return;
  }
  const warpscope::KernelTailSummary& s = tail->summaries[0];
  f->tail_fraction = s.tail_fraction;
  f->verdict = s.verdict.empty() ? "-" : "material";
  double cov = 0;
  int n = 0;
  for (const warpscope::ActiveWarpCurve& c : tail->curves) {
    cov += c.coverage;
    ++n;
  }
  f->coverage = n > 0 ? cov / n : 0;
  char detail[256];
  std::snprintf(detail, sizeof detail,
                "mean share of each launch covered by PM samples %.2f (a clock mismatch gives 0)",
                f->coverage);
  Check(f->coverage > 0.9, mode + "/samples_cover_kernels", detail);
  if (mode == "imbalanced") {
    std::snprintf(detail, sizeof detail, "tail fraction %.3f, designed %.3f (limit 0.10); %s",
                  f->tail_fraction, e.designed_tail, s.verdict.c_str());
    Check(!s.verdict.empty() && std::fabs(f->tail_fraction - e.designed_tail) <= 0.10,
          mode + "/designed_tail", detail);
  } else {
    std::snprintf(detail, sizeof detail, "tail fraction %.3f, verdict '%s'", f->tail_fraction,
                  s.verdict.c_str());
    Check(s.verdict.empty(), mode + "/no_tail_verdict", detail);
  }
}

void AppendRow(const std::string& row, const Expectation& e, const Figures& f) {
  std::ofstream out(row, std::ios::app);
  char line[512];
  std::snprintf(line, sizeof line, "%s,%s,%d,%d,%.2f,%.2f,%.2f,%.2f,%.3f,%.3f,%.2f,%s,%d\n",
                e.mode.c_str(), e.kernel.c_str(), e.api_blocks, f.ours_blocks, f.ours_theoretical,
                f.ncu_theoretical, f.ours_achieved, f.ncu_achieved, f.tail_fraction,
                e.designed_tail, f.coverage, f.verdict.c_str(), failures);
  out << line;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  if (flags.counts && !flags.trace.empty()) return PrintCounts(flags.trace);
  if (flags.trace.empty() || flags.expect.empty()) {
    std::fprintf(stderr,
                 "usage: ws_gpu_pm_check --trace T.wst --expect MODE.json [--ncu NCU.csv] "
                 "[--row ROW.csv]\n");
    return 100;
  }
  const std::string json = ReadFile(flags.expect);
  Expectation e;
  e.mode = JsonField(json, "mode");
  e.kernel = JsonField(json, "kernel");
  e.api_blocks = std::atoi(JsonField(json, "api_blocks_per_sm").c_str());
  e.api_pct = std::atof(JsonField(json, "api_occupancy_pct").c_str());
  e.designed_tail = std::atof(JsonField(json, "designed_tail_fraction").c_str());
  if (e.mode.empty() || e.kernel.empty()) {
    std::printf("FAIL expect %s is not a ws_pm_repro JSON file\n", flags.expect.c_str());
    return 100;
  }

  absl::StatusOr<warpscope::TraceModel> model = warpscope::TraceModel::Load(flags.trace);
  if (!model.ok()) {
    std::printf("FAIL %s load %s\n", e.mode.c_str(), std::string(model.status().message()).c_str());
    return 100;
  }
  const warpscope::PmInputs in = warpscope::PmInputsOf(*model);
  Check(!model->pm_samples.empty(), e.mode + "/pm_samples",
        std::to_string(model->pm_samples.size()) + " PM samples in the trace");
  Figures figures;
  CheckTheoretical(in, e, &figures);
  CheckAgainstNcu(flags.ncu, e, &figures);
  CheckTail(in, e, &figures);
  if (!flags.row.empty()) AppendRow(flags.row, e, figures);
  return failures;
}
