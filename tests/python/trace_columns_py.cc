// warpscope-trace-columns-py: writes the column tables of the event frames
// (analyzers/model/trace_columns_tables.cc) as the Python module python/warpscope/columns.py,
// from which the pure-Python reader builds the same frames as the C++ decoder: the tables are
// defined once, in C++.
//   warpscope-trace-columns-py OUT.py          writes the module
//   warpscope-trace-columns-py --check FILE.py exits 1 when FILE.py differs from the tables
#include <string>
#include <string_view>

#include "analyzers/model/trace_columns_internal.h"
#include "warpscope/v1/trace.pb.h"
#include "tests/python/generated_module.h"

namespace {

using warpscope::PyString;
using warpscope::columns_internal::Derive;

std::string_view DeriveWord(Derive derive) {
  switch (derive) {
    case Derive::kInt: return "int";
    case Derive::kSint: return "sint";
    case Derive::kEnd: return "end";
    case Derive::kBool: return "bool";
    case Derive::kEnum: return "enum";
    case Derive::kString: return "string";
    case Derive::kStack: return "stack";
    case Derive::kThread: return "thread";
    case Derive::kLaunch: return "launch";
  }
  return "?";
}

std::string Module() {
  std::string out =
      "# Generated from analyzers/model/trace_columns_tables.cc by warpscope-trace-columns-py\n"
      "# (tests/python/trace_columns_py.cc); do not edit. The python_columns_in_sync test fails\n"
      "# when the two differ.\n"
      "\"\"\"The event frames' columns as the C++ decoder defines them: (frame, TracePacket\n"
      "member, columns), each column (name, derive, field, aux, aux2). derive: int, sint (a\n"
      "sint32 field), end (start_ns + duration_ns), bool, enum (aux: the enum), string (an\n"
      "interned id), stack (a CallStack id), thread (the id, then the os_tid column aux and the\n"
      "name column aux2), launch (the LaunchConfig field of launch_config_id).\"\"\"\n"
      "\n"
      "EVENT_TABLES = (\n";
  const auto* packet = warpscope::v1::TracePacket::descriptor();
  for (const auto& table : warpscope::columns_internal::EventTables()) {
    out += "    (" + PyString(table.frame) + ", " +
           PyString(packet->FindFieldByNumber(table.packet_field)->name()) + ", (\n";
    for (const auto& c : table.columns) {
      out += "        (" + PyString(c.column) + ", " + PyString(DeriveWord(c.derive)) + ", " +
             PyString(c.field) + ", " + PyString(c.aux ? c.aux : "") + ", " +
             PyString(c.aux2 ? c.aux2 : "") + "),\n";
    }
    out += "    )),\n";
  }
  return out + ")\n";
}

}  // namespace

int main(int argc, char** argv) {
  return warpscope::GeneratedModuleMain(argc, argv, "warpscope-trace-columns-py",
                                        "analyzers/model/trace_columns_tables.cc", Module());
}
