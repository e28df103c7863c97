// Keeping a table of counters (StatDef rows: the stats table, the import counters) equal to its
// list in docs/format.md: the doc's rows between "<!-- NAME begin" and "<!-- NAME end", and
// the row a counter needs there.
#ifndef WARPSCOPE_TESTS_WRITER_COUNTER_TABLE_DOCS_H_
#define WARPSCOPE_TESTS_WRITER_COUNTER_TABLE_DOCS_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "proto/writer/stats_table.h"

namespace warpscope::testing {

inline std::string FormatMdPath() {
  const char* source_dir = std::getenv("WARPSCOPE_SOURCE_DIR");  // Set by ctest.
  return std::string(source_dir != nullptr ? source_dir : ".") + "/docs/format.md";
}

// The rows `| `name` | severity | meaning |` of the table marked `marker`, by name.
inline std::map<std::string, std::string> FormatMdRows(std::string_view marker) {
  std::ifstream in(FormatMdPath());
  EXPECT_TRUE(in.good()) << FormatMdPath();
  const std::string begin = "<!-- " + std::string(marker) + " begin";
  const std::string end = "<!-- " + std::string(marker) + " end";
  std::map<std::string, std::string> rows;
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.starts_with(begin)) in_table = true;
    if (line.starts_with(end)) break;
    if (!in_table || !line.starts_with("| `")) continue;
    const size_t name_end = line.find('`', 3);
    rows[line.substr(3, name_end - 3)] = line;
  }
  return rows;
}

inline std::string_view SeverityWord(Severity severity) {
  switch (severity) {
    case Severity::kInfo: return "info";
    case Severity::kDataLoss: return "data loss";
    case Severity::kError: return "error";
    default: return "?";
  }
}

// The meaning's < and > are written as HTML entities, so that Markdown shows them.
inline std::string DocRow(const StatDef& stat) {
  std::string meaning;
  for (char c : stat.meaning) {
    meaning += c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  }
  return "| `" + std::string(stat.name) + "` | " + std::string(SeverityWord(stat.severity)) +
         " | " + meaning + " |";
}

// Fails for a counter of `table` that docs/format.md's table `marker` lacks (printing the row
// to add), for a row that disagrees with it, and for a documented counter not in `table`.
inline void ExpectDocsListTable(std::span<const StatDef* const> table, std::string_view marker,
                                std::string_view table_file) {
  std::map<std::string, std::string> rows = FormatMdRows(marker);
  ASSERT_FALSE(rows.empty()) << "no table '" << marker << "' in " << FormatMdPath();
  for (const StatDef* stat : table) {
    auto it = rows.find(std::string(stat->name));
    if (it == rows.end()) {
      ADD_FAILURE() << "docs/format.md lacks the counter; add:\n" << DocRow(*stat);
      continue;
    }
    EXPECT_EQ(it->second, DocRow(*stat)) << "docs/format.md and " << table_file << " disagree";
    rows.erase(it);
  }
  for (const auto& [name, row] : rows) {
    ADD_FAILURE() << "docs/format.md lists " << name << ", which is not in " << table_file;
  }
}

}  // namespace warpscope::testing

#endif  // WARPSCOPE_TESTS_WRITER_COUNTER_TABLE_DOCS_H_
