// warpscope-stats-table-py: writes the stats table (proto/writer/stats_table.h) as the Python
// module python/warpscope/stats_table.py, so that the Python package shows the same severity
// and meaning per counter without a copy kept by hand.
//   warpscope-stats-table-py OUT.py          writes the module
//   warpscope-stats-table-py --check FILE.py exits 1 when FILE.py differs from the table
#include <string>
#include <string_view>

#include "proto/writer/stats_table.h"
#include "tests/python/generated_module.h"

namespace {

using warpscope::PyString;

std::string_view SeverityWord(warpscope::Severity severity) {
  switch (severity) {
    case warpscope::Severity::kInfo: return "info";
    case warpscope::Severity::kDataLoss: return "data_loss";
    case warpscope::Severity::kError: return "error";
  }
  return "?";
}

std::string Module() {
  std::string out =
      "# Generated from proto/writer/stats_table.cc by warpscope-stats-table-py\n"
      "# (tests/python/stats_table_py.cc); do not edit. The python_stats_table_in_sync test\n"
      "# fails when the two differ.\n"
      "\"\"\"The stats table's rows: (name, severity, meaning), in the C++ table's order.\"\"\"\n"
      "\n"
      "ROWS = (\n";
  for (const warpscope::StatDef* stat : warpscope::AllStats()) {
    out += "    (" + PyString(stat->name) + ", " + PyString(SeverityWord(stat->severity)) +
           ",\n     " + PyString(stat->meaning) + "),\n";
  }
  return out + ")\n";
}

}  // namespace

int main(int argc, char** argv) {
  return warpscope::GeneratedModuleMain(argc, argv, "warpscope-stats-table-py",
                                        "proto/writer/stats_table.cc", Module());
}
