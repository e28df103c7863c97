// The import counters' table against what uses it: docs/format.md lists exactly its rows,
// names are unique and in the reader's or the model's family, and a trace's problems are
// counted under the table's names with its severities and meanings.
#include "analyzers/model/import_counters.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/model/trace_model.h"
#include "tests/support/trace_test_util.h"
#include "tests/writer/counter_table_docs.h"

namespace warpscope {
namespace {

TEST(ImportCounters, NamesAreUniqueWithAMeaning) {
  std::set<std::string_view> names;
  for (const StatDef* counter : AllImportCounters()) {
    EXPECT_TRUE(names.insert(counter->name).second) << counter->name;
    EXPECT_TRUE(counter->name.starts_with("reader.") || counter->name.starts_with("model."))
        << counter->name;
    EXPECT_FALSE(counter->meaning.empty()) << counter->name;
  }
}

// Fails when a counter is missing from docs/format.md or from the table, or when the two
// disagree on its severity or meaning. The row the docs need is printed.
TEST(ImportCounters, FormatMdListsEveryCounterOfTheTable) {
  testing::ExpectDocsListTable(AllImportCounters(), "import counters",
                               "analyzers/model/import_counters.h");
}

TEST(ImportCounters, AppendLeavesOutZeroAndTakesTheRow) {
  std::vector<StatCounter> out;
  AppendImportCounter(import_counters::kReaderExtraHeaders, 0, &out);
  EXPECT_TRUE(out.empty());
  AppendImportCounter(import_counters::kReaderExtraHeaders, 2, &out);
  AppendImportCounter(import_counters::kModelPmRawSamplesNotEvaluated, 5, &out,
                      "no CUPTI host library on this machine");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "reader.extra_headers");
  EXPECT_EQ(out[0].value, 2u);
  EXPECT_EQ(out[0].severity, v1::SEVERITY_ERROR);
  EXPECT_EQ(out[0].description, import_counters::kReaderExtraHeaders.meaning);
  EXPECT_EQ(out[1].severity, v1::SEVERITY_ERROR);
  EXPECT_EQ(out[1].description, "no CUPTI host library on this machine");
}

// A cut trace with inconsistent descriptions: each counter TraceModel::Load reports is a row of
// the table, with the row's severity and meaning.
TEST(ImportCounters, LoadCountsUnderTheTablesRows) {
  std::string wire = testing::TextprotoToWire(R"(
    packet { header { format_major: 1 format_minor: 0 } }
    packet { header { format_major: 1 format_minor: 0 } }
    packet { pm_sample { metric_set_id: 4 values: 1 } }
    packet { capture_window { window_id: 2 begin: false } }
  )");
  absl::StatusOr<TraceModel> m = TraceModel::Load(testing::WriteTempFile(wire));
  ASSERT_TRUE(m.ok()) << m.status();
  std::set<std::string> seen;
  for (const StatCounter& c : m->import_counters) {
    const StatDef* row = nullptr;
    for (const StatDef* r : AllImportCounters()) row = r->name == c.name ? r : row;
    ASSERT_NE(row, nullptr) << c.name << " is not in the table";
    EXPECT_EQ(static_cast<int>(c.severity), static_cast<int>(row->severity)) << c.name;
    EXPECT_EQ(c.description, row->meaning) << c.name;
    seen.insert(c.name);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"reader.extra_headers", "reader.missing_end_of_trace",
                                         "model.pm_samples_without_metric_set",
                                         "model.unmatched_capture_window_ends"}));
}

}  // namespace
}  // namespace warpscope
