// `warpscope export TRACE... --format chrome|perfetto|kineto|parquet -o OUT`: traces in
// formats other tools load (analyzers/analyses/export_run.h, shared with the Python
// package); Parquet is written by the Python package, which this command runs. docs/export.md
// describes each.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "analyzers/analyses/export_run.h"
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

// The request of the flags given (export_run.h): the slice, --step-range and --all.
absl::StatusOr<ExportRequest> RequestOfFlags(const std::string& format, const FlagSet& flags,
                                             std::vector<std::string> traces) {
  static const std::vector<AnalysisOption> options = ExportOptions();
  std::map<std::string, std::string> given;
  for (const AnalysisOption& o : options) {
    if (flags.Has(o.name)) given[o.name] = o.kind == OptionKind::kSwitch ? "true" : flags.Get(o.name);
  }
  return ExportRequestOf(format, flags.Get("output"), std::move(traces),
                         OptionValues(&options, std::move(given)));
}

// Chrome, Perfetto or Kineto: the destination checked, the traces loaded, the files written.
int WriteExportFiles(const ExportRequest& request) {
  if (absl::Status s = PrepareExport(request); !s.ok()) return UsageError(s);
  std::vector<TraceModel> models;
  std::vector<const TraceModel*> pointers;
  if (!LoadTracesForCommand(request.traces, &models, &pointers,
                            ExportLoadOptions(request.format), request.slice)) {
    return 1;
  }
  absl::StatusOr<std::vector<std::string>> written = WriteExport(request, pointers);
  if (!written.ok()) return InputError(written.status());
  for (const std::string& path : *written) {
    if (path != "-") std::fprintf(stderr, "warpscope: wrote %s\n", path.c_str());
  }
  return 0;
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
       "the file or directory to write; - is stdout (chrome, perfetto, kineto of one trace)", ""}};
  for (const AnalysisOption& o : ExportOptions()) specs.push_back(FlagOf(o));
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
  absl::StatusOr<ExportRequest> request = RequestOfFlags(*format, flags, *expanded);
  if (!request.ok()) return UsageError(request.status());
  if (*format == "parquet") {
    if (!request->slice.empty()) {
      return UsageError(absl::InvalidArgumentError(absl::StrCat(
          request->slice.flags,
          ": --format parquet writes whole traces (filter the tables in Python); "
          "a slice is for chrome, perfetto and kineto")));
    }
    return ExportParquet(out, request->traces);
  }
  return WriteExportFiles(*request);
}

}  // namespace warpscope
