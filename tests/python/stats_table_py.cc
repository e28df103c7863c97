// warpscope-stats-table-py: writes the stats table (proto/writer/stats_table.h) as the Python
// module python/warpscope/stats_table.py, so that the Python package shows the same severity
// and meaning per counter without a copy kept by hand.
//   warpscope-stats-table-py OUT.py          writes the module
//   warpscope-stats-table-py --check FILE.py exits 1 when FILE.py differs from the table
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "proto/writer/stats_table.h"

namespace {

std::string_view SeverityWord(warpscope::Severity severity) {
  switch (severity) {
    case warpscope::Severity::kInfo: return "info";
    case warpscope::Severity::kDataLoss: return "data_loss";
    case warpscope::Severity::kError: return "error";
  }
  return "?";
}

// A Python string literal; the file is UTF-8, so only quotes and backslashes need escapes.
std::string PyString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
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
  const std::string module = Module();
  if (argc == 3 && std::string_view(argv[1]) == "--check") {
    std::ifstream in(argv[2], std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (in.is_open() && text.str() == module) return 0;
    std::fprintf(stderr,
                 "warpscope: %s differs from the stats table in proto/writer/stats_table.cc; "
                 "regenerate it with warpscope-stats-table-py %s\n",
                 argv[2], argv[2]);
    return 1;
  }
  if (argc != 2 || std::string_view(argv[1]).starts_with("-")) {
    std::fprintf(stderr, "usage: warpscope-stats-table-py OUT.py | --check FILE.py\n");
    return 2;
  }
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out << module;
  out.close();
  if (!out) {
    std::fprintf(stderr, "warpscope: cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
