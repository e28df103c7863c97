// `warpscope export TRACE... --format chrome|perfetto|kineto|parquet -o OUT`: traces in
// formats other tools load (analyzers/analyses/export/export_chrome.h, export_perfetto.h,
// export_kineto.h); Parquet is
// written by the Python package, which this command runs. docs/export.md describes each.
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/export/export_chrome.h"
#include "analyzers/analyses/export/export_kineto.h"
#include "analyzers/analyses/export/export_perfetto.h"
#include "analyzers/analyses/slice.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/model/trace_paths.h"
#include "analyzers/render/output_path.h"
#include "proto/settings/setting_error.h"

extern char** environ;

namespace warpscope {
namespace {

constexpr char kParquetInstall[] =
    "--format parquet is written by the warpscope Python package with pyarrow: install both "
    "(pip install ./python pyarrow) for the python3 on PATH";

// Runs `args` (args[0] looked up on PATH) with the environment `env` and returns its exit
// status; -1 when it could not be started, 128+N when signal N ended it.
int RunProgram(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

// The folder beside this executable that holds the warpscope package, "" when there is none:
// python/ of the build tree (build/bin/warpscope: CMake links the package there and
// scripts/build.sh puts the warpscope_native extension beside it) or the lib/python3/
// dist-packages of `cmake --install`.
std::string PackageFolderBesideExecutable() {
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "";
  const std::string bin(exe, static_cast<size_t>(n));
  const std::string prefix = bin.substr(0, bin.rfind('/')) + "/..";
  for (const char* folder : {"/python", "/lib/python3/dist-packages"}) {
    const std::string candidate = prefix + folder;
    if (::access((candidate + "/warpscope/__init__.py").c_str(), R_OK) == 0) return candidate;
  }
  return "";
}

// This process's environment, with the package folder beside the executable (if any) first
// on PYTHONPATH, so that the package built with this CLI is the one that runs.
std::vector<std::string> PythonEnvironment() {
  std::vector<std::string> env;
  std::string python_path = PackageFolderBesideExecutable();
  for (char** e = environ; *e != nullptr; ++e) {
    if (absl::StartsWith(*e, "PYTHONPATH=")) {
      const std::string old = std::string(*e).substr(11);
      if (!old.empty()) python_path = python_path.empty() ? old : python_path + ":" + old;
    } else {
      env.push_back(*e);
    }
  }
  if (!python_path.empty()) env.push_back("PYTHONPATH=" + python_path);
  return env;
}

// Parquet: `python3 -m warpscope export --format parquet -o DIR TRACE...`, once DIR is known
// to be one that can be written (made by the package, which also reads the folders among the
// traces) and python3 to have the package and pyarrow.
int ExportParquet(const std::string& out, const std::vector<std::string>& traces) {
  if (absl::StatusOr<bool> ok = CheckOutputDirectory(out, "-o"); !ok.ok()) {
    return UsageError(ok.status());
  }
  const std::vector<std::string> env = PythonEnvironment();
  const int probe =
      RunProgram({"python3", "-c",
                  "import importlib.util as u, sys; "
                  "sys.exit(0 if u.find_spec('pyarrow') and u.find_spec('warpscope') else 3)"},
                 env);
  if (probe == -1) {
    return UsageError(
        absl::FailedPreconditionError(absl::StrCat("no python3 on PATH; ", kParquetInstall)));
  }
  if (probe != 0) return UsageError(absl::FailedPreconditionError(kParquetInstall));
  std::vector<std::string> args = {"python3",  "-m",      "warpscope", "export",
                                   "--format", "parquet", "-o",        out};
  args.insert(args.end(), traces.begin(), traces.end());
  std::fflush(nullptr);
  const int status = RunProgram(args, env);
  return status < 0 ? 1 : status;
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The destination is checked before the traces are read: a directory for kineto files is
// created, a file path must be one that can be written. nullopt when OUT is ready.
std::optional<int> PrepareExportDestination(const std::string& format, const std::string& out,
                                            bool kineto_directory) {
  if (kineto_directory) {
    if (!IsDirectory(out) && ::mkdir(out.c_str(), 0777) != 0) {
      return UsageError(absl::InvalidArgumentError(
          absl::StrCat("-o ", QuoteValue(out), ": cannot create the directory (",
                       std::strerror(errno), "); choose another path")));
    }
  } else if (out != "-") {
    const char* example = format == "perfetto" ? "trace.pftrace" : "trace.json";
    if (absl::StatusOr<bool> ok = CheckOutputPath(out, "-o", example); !ok.ok()) {
      return UsageError(ok.status());
    }
  }
  return std::nullopt;
}

// Chrome and Kineto are written as they are made, the events read from the file kind by
// kind (ForEachEvent): the models hold what the traces define (with the index from each
// call to its stack) and, for Kineto's steps, NVTX ranges and NCCL calls. Perfetto's events
// are put in time order across all tracks before they are written: it loads every event.
TraceModelOptions ExportLoadOptions(const std::string& format) {
  TraceModelOptions options;
  if (format == "chrome") options.keep_events = 0;
  if (format == "kineto") {
    options.keep_events = EventKindBit(EventKind::kNvtxRange) | EventKindBit(EventKind::kNcclCall);
  }
  return options;
}

// Chrome or Perfetto: every trace into one file (or stdout).
int WriteOneFileExport(const std::string& format, const std::vector<const TraceModel*>& traces,
                       const std::string& out) {
  FileExportOutput file(out, "-o");
  absl::Status written;
  if (format == "perfetto") {
    WritePerfettoTrace(traces, file);
  } else {
    written = WriteChromeTraceJson(traces, file);
  }
  if (absl::Status closed = file.Finish(); written.ok()) written = closed;
  if (!written.ok()) return InputError(written);
  if (out != "-") std::fprintf(stderr, "warpscope: wrote %s\n", out.c_str());
  return 0;
}

// Kineto: a file per rank in the directory OUT, or the one trace's file at OUT.
int WriteKinetoExport(const std::vector<const TraceModel*>& traces, const std::string& out,
                      bool kineto_directory, const std::string& step) {
  const std::vector<KinetoTraceFile> files = KinetoTraceFiles(traces);
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string path = kineto_directory ? absl::StrCat(out, "/", files[i].file_name) : out;
    FileExportOutput file(path, "-o");
    absl::Status written = WriteKinetoTrace(traces, i, step, file);
    if (absl::Status closed = file.Finish(); written.ok()) written = closed;
    if (!written.ok()) return InputError(written);
    if (path != "-") std::fprintf(stderr, "warpscope: wrote %s\n", path.c_str());
  }
  return 0;
}

// The slice asked for (slice.h), with --step-range naming the steps.
absl::StatusOr<SliceRequest> ExportSlice(const FlagSet& flags) {
  static const std::vector<AnalysisOption> options = SliceOptions();
  std::map<std::string, std::string> given;
  for (const AnalysisOption& o : options) {
    if (flags.Has(o.name)) given[o.name] = flags.Get(o.name);
  }
  if (flags.Has("step-range")) given["step-range"] = flags.Get("step-range");
  return ParseSlice(OptionValues(&options, std::move(given)));
}

// The exports write a whole trace above kWholeExportBytes only when asked (--all): its JSON
// is ten times its size, more than a viewer opens.
constexpr uint64_t kWholeExportBytes = uint64_t{64} << 20;

absl::Status CheckWholeExport(const std::vector<std::string>& traces) {
  uint64_t bytes = 0;
  for (const std::string& path : traces) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) bytes += static_cast<uint64_t>(st.st_size);
  }
  if (bytes <= kWholeExportBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "export of %.0f MB of trace: the whole trace is written only when asked (over %d MB); "
      "give a slice (--step N-M, --from MS --to MS or --window K) or --all",
      static_cast<double>(bytes) / 1e6, static_cast<int>(kWholeExportBytes >> 20)));
}

}  // namespace

int RunExportCommand(const CommandArgs& args) {
  std::vector<FlagSpec> specs = {
      {"format", "f", true, "FORMAT",
       "chrome (trace-event JSON, one file), perfetto (Perfetto's protobuf trace, one file), "
       "kineto (PyTorch profiler JSON for Holistic Trace Analysis: a file for one trace ending "
       "in .json, else a directory with one file per rank) or parquet (a directory, through "
       "the Python package)",
       ""},
      {"output", "o", true, "OUT",
       "the file or directory to write; - is stdout (chrome, perfetto, kineto of one trace)", ""},
      {"step-range", "", true, "RANGE",
       "the NVTX range that marks a step: --step's numbering and kineto's ProfilerStep#N "
       "(default: a numbered or step-named range, as warpscope job finds it)",
       ""},
      {"all", "", false, "", "write the whole trace however large (chrome, perfetto, kineto)", ""}};
  for (const AnalysisOption& o : SliceOptions()) specs.push_back(FlagOf(o));
  FlagSet flags("export", "TRACE.wst... | DIR --format FORMAT -o OUT", std::move(specs));
  if (std::optional<int> exit = ParseCommandFlags(
          flags, args, "One process per trace (rank) on one time line. See docs/export.md.\n")) {
    return *exit;
  }
  if (flags.positionals().empty()) {
    return UsageError(absl::InvalidArgumentError(
        "export needs at least one trace file; see warpscope export --help"));
  }
  if (!flags.Has("format")) {
    return UsageError(absl::InvalidArgumentError(
        "export needs --format chrome, perfetto, kineto or parquet; see warpscope export --help"));
  }
  absl::StatusOr<std::string> format =
      flags.GetChoice("format", {"chrome", "perfetto", "kineto", "parquet"});
  if (!format.ok()) return UsageError(format.status());
  const std::string out = flags.Get("output");
  if (out.empty()) {
    return UsageError(absl::InvalidArgumentError(
        "export needs -o OUT, the file or directory to write; see warpscope export --help"));
  }
  // Files, folders and globs alike, as every command that reads traces takes them.
  absl::StatusOr<std::vector<std::string>> expanded = ExpandTracePaths(flags.positionals());
  if (!expanded.ok()) return InputError(expanded.status());
  const std::vector<std::string>& traces = *expanded;
  absl::StatusOr<SliceRequest> slice = ExportSlice(flags);
  if (!slice.ok()) return UsageError(slice.status());
  if (*format == "parquet") {
    if (!slice->empty()) {
      return UsageError(absl::InvalidArgumentError(absl::StrCat(
          slice->flags, ": --format parquet writes whole traces (filter the tables in Python); "
                        "a slice is for chrome, perfetto and kineto")));
    }
    return ExportParquet(out, traces);
  }
  if (slice->empty() && !flags.Has("all")) {
    if (absl::Status s = CheckWholeExport(traces); !s.ok()) return UsageError(s);
  }

  // One kineto file per rank goes into a directory unless one trace goes to a .json file.
  const bool kineto_directory =
      *format == "kineto" && out != "-" && !(traces.size() == 1 && absl::EndsWith(out, ".json"));
  if (*format == "kineto" && out == "-" && traces.size() != 1) {
    return UsageError(absl::InvalidArgumentError(
        "-o - (stdout) takes the kineto export of one trace; name a directory for several"));
  }
  if (std::optional<int> exit = PrepareExportDestination(*format, out, kineto_directory)) {
    return *exit;
  }
  std::vector<TraceModel> models;
  std::vector<const TraceModel*> pointers;
  if (!LoadTracesForCommand(traces, &models, &pointers, ExportLoadOptions(*format), *slice)) {
    return 1;
  }
  if (*format == "kineto")
    return WriteKinetoExport(pointers, out, kineto_directory, flags.Get("step-range"));
  return WriteOneFileExport(*format, pointers, out);
}

}  // namespace warpscope
