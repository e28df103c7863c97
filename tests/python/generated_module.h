// What the generators of the Python package's copies of C++ tables share
// (stats_table_py.cc, trace_columns_py.cc): Python string literals and the command line
// `TOOL OUT.py | --check FILE.py`.
#ifndef WARPSCOPE_TESTS_PYTHON_GENERATED_MODULE_H_
#define WARPSCOPE_TESTS_PYTHON_GENERATED_MODULE_H_

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace warpscope {

// A Python string literal; the file is UTF-8, so only quotes and backslashes need escapes.
inline std::string PyString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Writes `module` to OUT.py, or with --check exits 1 when FILE.py differs from it; `tool` and
// `source` name the generator and the C++ table in the messages.
inline int GeneratedModuleMain(int argc, char** argv, const char* tool, const char* source,
                               const std::string& module) {
  if (argc == 3 && std::string_view(argv[1]) == "--check") {
    std::ifstream in(argv[2], std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (in.is_open() && text.str() == module) return 0;
    std::fprintf(stderr, "warpscope: %s differs from the table in %s; regenerate it with %s %s\n",
                 argv[2], source, tool, argv[2]);
    return 1;
  }
  if (argc != 2 || std::string_view(argv[1]).starts_with("-")) {
    std::fprintf(stderr, "usage: %s OUT.py | --check FILE.py\n", tool);
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

}  // namespace warpscope

#endif  // WARPSCOPE_TESTS_PYTHON_GENERATED_MODULE_H_
