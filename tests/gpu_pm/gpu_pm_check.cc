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

#include "analyzers/analyses/occupancy_report.h"
#include "analyzers/analyses/tail_report.h"
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

}  // namespace

int main(int argc, char** argv) {
  std::string trace, expect, ncu, row;
  bool counts = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--counts") counts = true;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--counts") {
      --i;
      continue;
    }
    if (flag == "--trace")
      trace = argv[i + 1];
    else if (flag == "--expect")
      expect = argv[i + 1];
    else if (flag == "--ncu")
      ncu = argv[i + 1];
    else if (flag == "--row")
      row = argv[i + 1];
  }
  if (counts && !trace.empty()) {
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
  if (trace.empty() || expect.empty()) {
    std::fprintf(stderr,
                 "usage: ws_gpu_pm_check --trace T.wst --expect MODE.json [--ncu NCU.csv] "
                 "[--row ROW.csv]\n");
    return 100;
  }
  const std::string json = ReadFile(expect);
  const std::string mode = JsonField(json, "mode");
  const std::string kernel = JsonField(json, "kernel");
  const int api_blocks = std::atoi(JsonField(json, "api_blocks_per_sm").c_str());
  const double api_pct = std::atof(JsonField(json, "api_occupancy_pct").c_str());
  const double designed_tail = std::atof(JsonField(json, "designed_tail_fraction").c_str());
  if (mode.empty() || kernel.empty()) {
    std::printf("FAIL expect %s is not a ws_pm_repro JSON file\n", expect.c_str());
    return 100;
  }

  absl::StatusOr<warpscope::TraceModel> model = warpscope::TraceModel::Load(trace);
  if (!model.ok()) {
    std::printf("FAIL %s load %s\n", mode.c_str(), std::string(model.status().message()).c_str());
    return 100;
  }
  const warpscope::PmInputs in = warpscope::PmInputsOf(*model);
  Check(!model->pm_samples.empty(), mode + "/pm_samples",
        std::to_string(model->pm_samples.size()) + " PM samples in the trace");

  warpscope::OccupancyReportOptions occ_options;
  occ_options.kernel_regex = kernel;
  auto occ = warpscope::BuildOccupancyReport(in, occ_options);
  const warpscope::OccupancyRow* r = nullptr;
  if (occ.ok()) {
    for (const warpscope::OccupancyRow& candidate : occ->rows) {
      if (r == nullptr || candidate.launches > r->launches) r = &candidate;
    }
  }
  double ours_theoretical = NAN, ours_achieved = NAN;
  int ours_blocks = -1;
  if (r == nullptr || !r->theoretical) {
    Check(false, mode + "/theoretical", "no theoretical occupancy for " + kernel);
  } else {
    ours_blocks = r->theoretical->blocks_per_sm;
    ours_theoretical = 100 * r->theoretical->occupancy;
    char detail[256];
    std::snprintf(detail, sizeof detail,
                  "warpscope %d blocks/SM (%.2f%%, %s), occupancy API %d (%.2f%%)", ours_blocks,
                  ours_theoretical, warpscope::LimiterNames(r->theoretical->limiters).c_str(),
                  api_blocks, api_pct);
    Check(ours_blocks == api_blocks, mode + "/theoretical_vs_api", detail);
    ours_achieved = 100 * r->achieved;
  }

  double ncu_theoretical = NAN, ncu_achieved = NAN;
  if (!ncu.empty()) {
    const std::string csv = ReadFile(ncu);
    ncu_theoretical = NcuMetric(csv, kernel, "sm__maximum_warps_per_active_cycle_pct");
    ncu_achieved = NcuMetric(csv, kernel, "sm__warps_active.avg.pct_of_peak_sustained_active");
    char detail[256];
    std::snprintf(detail, sizeof detail, "warpscope %.2f%%, Nsight Compute %.2f%%",
                  ours_theoretical, ncu_theoretical);
    Check(std::fabs(ours_theoretical - ncu_theoretical) < 0.5, mode + "/theoretical_vs_ncu",
          detail);
    std::snprintf(detail, sizeof detail, "warpscope %.2f%%, Nsight Compute %.2f%% (limit 5 points)",
                  ours_achieved, ncu_achieved);
    Check(std::fabs(ours_achieved - ncu_achieved) <= 5.0, mode + "/achieved_vs_ncu", detail);
  } else {
    std::printf("SKIP %s/ncu no Nsight Compute CSV given\n", mode.c_str());
  }

  warpscope::TailReportOptions tail_options;
  tail_options.kernel_regex = kernel;
  auto tail = warpscope::BuildTailReportFiltered(in, tail_options);
  double tail_fraction = NAN, coverage = NAN;
  std::string verdict = "n/a";
  if (tail.ok() && !tail->summaries.empty()) {
    const warpscope::KernelTailSummary& s = tail->summaries[0];
    tail_fraction = s.tail_fraction;
    verdict = s.verdict.empty() ? "-" : "material";
    double cov = 0;
    int n = 0;
    for (const warpscope::ActiveWarpCurve& c : tail->curves) {
      cov += c.coverage;
      ++n;
    }
    coverage = n > 0 ? cov / n : 0;
    char detail[256];
    std::snprintf(detail, sizeof detail,
                  "mean share of each launch covered by PM samples %.2f (a clock mismatch gives 0)",
                  coverage);
    Check(coverage > 0.9, mode + "/samples_cover_kernels", detail);
    if (mode == "imbalanced") {
      std::snprintf(detail, sizeof detail, "tail fraction %.3f, designed %.3f (limit 0.10); %s",
                    tail_fraction, designed_tail, s.verdict.c_str());
      Check(!s.verdict.empty() && std::fabs(tail_fraction - designed_tail) <= 0.10,
            mode + "/designed_tail", detail);
    } else {
      std::snprintf(detail, sizeof detail, "tail fraction %.3f, verdict '%s'", tail_fraction,
                    s.verdict.c_str());
      Check(s.verdict.empty(), mode + "/no_tail_verdict", detail);
    }
  } else {
    Check(false, mode + "/tail", "no tail summary for " + kernel);
  }

  if (!row.empty()) {
    std::ofstream out(row, std::ios::app);
    char line[512];
    std::snprintf(line, sizeof line, "%s,%s,%d,%d,%.2f,%.2f,%.2f,%.2f,%.3f,%.3f,%.2f,%s,%d\n",
                  mode.c_str(), kernel.c_str(), api_blocks, ours_blocks, ours_theoretical,
                  ncu_theoretical, ours_achieved, ncu_achieved, tail_fraction, designed_tail,
                  coverage, verdict.c_str(), failures);
    out << line;
  }
  return failures;
}
