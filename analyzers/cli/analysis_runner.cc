// The one runner of every analysis row (analyses/analysis.h): parses the row's flags, checks
// the output paths, expands and loads the traces by the row's input kind, runs the analysis,
// renders its report and writes it and its files (commands.h).
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/slice.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/model/trace_paths.h"
#include "analyzers/render/output_path.h"
#include "analyzers/render/report.h"

namespace warpscope {
namespace {

// The row's options as flags, after the flags every analysis has.
FlagSet RowFlags(const AnalysisRow& row) {
  std::vector<FlagSpec> specs = {{"format", "f", true, "FORMAT", "table, csv or json", "table"}};
  for (const AnalysisOption& o : row.options) specs.push_back(FlagOf(o));
  specs.push_back({"table", "t", true, "NAME", "only this table of the report (csv, json)", ""});
  specs.push_back({"output", "o", true, "FILE", "write the report to FILE instead of stdout", ""});
  return FlagSet(row.name, row.usage, std::move(specs));
}

std::string CountError(const AnalysisRow& row) {
  const char* needs = row.input == AnalysisInput::kOneTrace ? "exactly one trace file"
                      : row.input == AnalysisInput::kPair   ? "two traces, BASE and NEW"
                                                            : "at least one trace file";
  return absl::StrCat(row.name, " needs ", needs, "; see warpscope ", row.name, " --help");
}

// The options given, checked by kind; output files checked before any trace is read.
absl::StatusOr<OptionValues> CheckedOptions(const AnalysisRow& row, const FlagSet& flags) {
  std::map<std::string, std::string> given;
  for (const AnalysisOption& o : row.options) {
    if (flags.Has(o.name)) given[o.name] = flags.Get(o.name);
  }
  OptionValues values(&row.options, std::move(given));
  if (absl::Status s = CheckRowOptions(row, values); !s.ok()) return s;
  const std::string out = flags.Get("output");
  if (flags.Has("output") && out != "-") {
    absl::StatusOr<bool> ok = CheckOutputPath(out, "-o", absl::StrCat(row.name, ".txt"));
    if (!ok.ok()) return ok.status();
  }
  return values;
}

// Writes the report (to -o or stdout), then its notes, notices and files; the exit status.
int WriteResult(const FlagSet& flags, const OptionValues& values,
                OutputFormat format, const AnalysisResult& result) {
  absl::StatusOr<std::string> text = RenderReport(result.report, format, flags.Get("table"));
  if (!text.ok()) return UsageError(text.status());
  const std::string out = flags.Get("output");
  if (flags.Has("output") && out != "-") {
    if (absl::Status s = WriteOutputFile(out, "-o", *text); !s.ok()) return InputError(s);
  } else {
    std::fputs(text->c_str(), stdout);
  }
  // Tables carry the notes; CSV and JSON stay machine-readable.
  if (format != OutputFormat::kTable) {
    for (const std::string& note : result.report.notes) {
      std::fprintf(stderr, "warpscope: %s\n", note.c_str());
    }
  }
  for (const std::string& notice : result.notices) {
    std::fprintf(stderr, "warpscope: %s\n", notice.c_str());
  }
  for (const AnalysisFile& file : result.files) {
    const std::string path = values.Text(file.option);
    if (absl::Status s = WriteAnalysisFile(file, values); !s.ok()) return InputError(s);
    std::fprintf(stderr, "warpscope: wrote %s%s\n", path.c_str(),
                 file.detail.empty() ? "" : absl::StrCat(" (", file.detail, ")").c_str());
  }
  if (result.exit_status != 0) {
    std::fprintf(stderr, "warpscope: %s\n", result.exit_message.c_str());
  }
  return result.exit_status;
}

}  // namespace

int RunAnalysisCommand(const AnalysisRow& row, const CommandArgs& args) {
  FlagSet flags = RowFlags(row);
  if (std::optional<int> exit = ParseCommandFlags(flags, args, row.about)) return *exit;
  const size_t n = flags.positionals().size();
  if (n == 0 || (row.input == AnalysisInput::kOneTrace && n != 1) ||
      (row.input == AnalysisInput::kPair && n > 2)) {
    return UsageError(absl::InvalidArgumentError(CountError(row)));
  }
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(flags.Get("format"));
  if (!format.ok()) return UsageError(format.status());
  absl::StatusOr<OptionValues> values = CheckedOptions(row, flags);
  if (!values.ok()) return UsageError(values.status());

  AnalysisInputs in;
  in.given = flags.positionals();
  in.scope = {*format == OutputFormat::kTable, flags.Get("table")};
  absl::StatusOr<std::vector<std::string>> paths = ExpandTracePaths(in.given);
  if (!paths.ok()) return InputError(paths.status());
  in.paths = std::move(*paths);
  if (absl::Status s = CheckTraceCount(row, in); !s.ok()) return UsageError(s);
  absl::StatusOr<SliceRequest> slice = SliceOfRun(row, in, *values);
  if (!slice.ok()) return UsageError(slice.status());
  std::vector<TraceModel> models;
  if (LoadsTraces(row, in)) {
    const TraceModelOptions load = row.load_options ? row.load_options(*values) : TraceModelOptions();
    if (!LoadTracesForCommand(in.paths, &models, &in.traces, load, *slice)) return 1;
  }
  absl::StatusOr<AnalysisResult> result = row.run(in, *values);
  if (!result.ok()) {
    return result.status().code() == absl::StatusCode::kInvalidArgument
               ? UsageError(result.status())
               : InputError(result.status());
  }
  return WriteResult(flags, *values, *format, *result);
}

}  // namespace warpscope
