// The list of analyses (analysis.h): one line per analysis, in the order `warpscope help`
// gives them. Each row is defined beside its analysis (<name>_row.cc).
#include <vector>

#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/slice.h"

namespace warpscope {

AnalysisRow InfoAnalysis();       // info_row.cc
AnalysisRow SummaryAnalysis();    // summary_row.cc
AnalysisRow OccupancyAnalysis();  // occupancy_row.cc
AnalysisRow TailAnalysis();       // tail_row.cc
AnalysisRow StallsAnalysis();     // stalls_row.cc
AnalysisRow DiffAnalysis();       // diff_row.cc
AnalysisRow AdviseAnalysis();     // advise/advise_row.cc
AnalysisRow JobAnalysis();        // job/job_row.cc
AnalysisRow TimelineAnalysis();   // timeline_row.cc
AnalysisRow PrecisionAnalysis();  // precision_row.cc
AnalysisRow MemoryAnalysis();     // memory_row.cc
AnalysisRow SolAnalysis();        // sol_row.cc

namespace {

// Every row that loads traces reads the part of them asked for (slice.h): the same options,
// added here once.
std::vector<AnalysisRow> WithSliceOptions(std::vector<AnalysisRow> rows) {
  for (AnalysisRow& row : rows) {
    if (row.input == AnalysisInput::kJob) continue;
    for (AnalysisOption& o : SliceOptions()) row.options.push_back(std::move(o));
  }
  return rows;
}

}  // namespace

const std::vector<AnalysisRow>& AnalysisRows() {
  static const std::vector<AnalysisRow> rows = WithSliceOptions({
      InfoAnalysis(), SummaryAnalysis(), OccupancyAnalysis(), TailAnalysis(),     StallsAnalysis(),
      DiffAnalysis(), AdviseAnalysis(),  JobAnalysis(),       TimelineAnalysis(), PrecisionAnalysis(),
      MemoryAnalysis(), SolAnalysis(),
  });
  return rows;
}

const AnalysisRow* FindAnalysis(std::string_view name) {
  for (const AnalysisRow& row : AnalysisRows()) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

}  // namespace warpscope
