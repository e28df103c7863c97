// Option values of an analysis row, checked by kind (analysis.h).
#include "analyzers/analyses/analysis.h"

#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/slice.h"
#include "analyzers/render/output_path.h"
#include "proto/settings/setting_error.h"

namespace warpscope {

AnalysisOption ShortNamesOption() {
  return {"short-names", "", OptionKind::kSwitch, "",
          "kernel names short; template arguments where two would read alike (docs/cli.md)", ""};
}

KernelNames KernelNamesOf(const OptionValues& options,
                          const std::vector<const TraceModel*>& traces,
                          const std::vector<std::string_view>& more) {
  if (!options.Has("short-names")) return KernelNames();
  std::vector<std::string_view> names = more;
  std::set<std::string, std::less<>> read_again;  // of traces loaded without their kernels
  for (const TraceModel* model : traces) {
    if ((model->kept_events & EventKindBit(EventKind::kKernel)) != 0) {
      for (std::string_view name : KernelDisplayNames(*model)) names.push_back(name);
      continue;
    }
    // The file was read once already: an error now leaves that trace's names out, which can
    // only make names longer, never alike.
    (void)ForEachEvent<KernelEvent>(*model, [&](const KernelEvent& k) {
      const std::string name = KernelDisplayName(k);
      if (read_again.find(name) != read_again.end()) return;
      names.push_back(*read_again.insert(name).first);
    });
  }
  return KernelNames::Short(names);
}

AnalysisOption KernelRegexOption() {
  return {"kernel", "k", OptionKind::kText, "REGEX",
          "only kernels whose name matches (RE2 syntax)", ""};
}

AnalysisOption KernelDeviceOption() {
  return {"device", "", OptionKind::kDevice, "N", "only this device's kernels", ""};
}

AnalysisOption TopKernelsOption() {
  return {"top", "n", OptionKind::kCount, "N", "keep the N kernels with the most GPU time (0 = all)",
          "20"};
}

AnalysisOption LiteralRangesOption() {
  return {"literal-ranges", "", OptionKind::kSwitch, "",
          "NVTX ranges by their names as written (step_12, not step_<N>)", ""};
}

TraceModelOptions SamplesReadAgainLoad(const OptionValues&) {
  TraceModelOptions load;
  load.keep_events = 0;
  load.keep_pc_sample_records = false;
  load.keep_pm_samples = false;
  return load;
}

absl::Status CheckRowOptions(const AnalysisRow& row, const OptionValues& values) {
  if (absl::Status s = values.Check(); !s.ok()) return s;
  if (absl::StatusOr<SliceRequest> slice = ParseSlice(values); !slice.ok()) return slice.status();
  if (row.check != nullptr) {
    if (absl::Status s = row.check(values); !s.ok()) return s;
  }
  for (const AnalysisOption& o : row.options) {
    if (o.kind != OptionKind::kOutputFile) continue;
    if (!values.Has(o.name)) {
      if (!o.required) continue;
      return absl::InvalidArgumentError(absl::StrCat(row.name, " needs --", o.name, " ",
                                                     o.value_name, ", ", o.help, "; see warpscope ",
                                                     row.name, " --help"));
    }
    absl::StatusOr<bool> ok = CheckOutputPath(values.Text(o.name), "--" + o.name, o.example_file);
    if (!ok.ok()) return ok.status();
  }
  return absl::OkStatus();
}

absl::Status WriteAnalysisFile(const AnalysisFile& file, const OptionValues& values) {
  return WriteOutputFile(values.Text(file.option), "--" + file.option, file.content);
}

absl::Status CheckTraceCount(const AnalysisRow& row, const AnalysisInputs& in) {
  const size_t n = in.paths.size();
  if (row.input == AnalysisInput::kOneTrace && n != 1) {
    return absl::InvalidArgumentError(absl::StrCat(row.name, " reads one trace, not ", n,
                                                   " (from ", absl::StrJoin(in.given, " "),
                                                   "): name one of them"));
  }
  if (row.input == AnalysisInput::kPair && n != 2) {
    return absl::InvalidArgumentError(absl::StrCat(row.name,
                                                   " needs two traces, BASE and NEW, not ", n,
                                                   " (from ", absl::StrJoin(in.given, " "), ")"));
  }
  return absl::OkStatus();
}

bool LoadsTraces(const AnalysisRow& row, const AnalysisInputs& in) {
  if (row.input == AnalysisInput::kJob) return false;
  if (row.input != AnalysisInput::kTraceOrJob) return true;
  struct stat st {};
  const bool folder = !in.given.empty() && ::stat(in.given[0].c_str(), &st) == 0 &&
                      S_ISDIR(st.st_mode);
  return in.paths.size() == 1 && !folder;
}

absl::Status AsInputError(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kInvalidArgument) return status;
  return absl::FailedPreconditionError(status.message());
}

const AnalysisOption* OptionValues::Find(std::string_view name) const {
  for (const AnalysisOption& option : *options_) {
    if (option.name == name) return &option;
  }
  return nullptr;
}

bool OptionValues::Has(std::string_view name) const {
  return given_.count(std::string(name)) > 0;
}

std::string OptionValues::Text(std::string_view name) const {
  if (auto it = given_.find(std::string(name)); it != given_.end()) return it->second;
  const AnalysisOption* option = Find(name);
  return option != nullptr ? option->default_value : std::string();
}

int64_t OptionValues::Integer(std::string_view name) const {
  int64_t value = 0;
  (void)absl::SimpleAtoi(Text(name), &value);  // Check() refused what is not a number
  return value;
}

size_t OptionValues::Count(std::string_view name) const {
  return static_cast<size_t>(std::clamp<int64_t>(Integer(name), 0, int64_t{1} << 20));
}

std::optional<uint32_t> OptionValues::Device(std::string_view name) const {
  if (!Has(name)) return std::nullopt;
  return static_cast<uint32_t>(Integer(name));
}

absl::Status OptionValues::Check() const {
  for (const AnalysisOption& option : *options_) {
    const bool whole = option.kind == OptionKind::kCount || option.kind == OptionKind::kInteger ||
                       option.kind == OptionKind::kDevice;
    if (!whole || (option.kind == OptionKind::kDevice && !Has(option.name))) continue;
    const std::string text = Text(option.name);
    int64_t value = 0;
    if (!absl::SimpleAtoi(text, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag --", option.name, " expects a whole number, got ", QuoteValue(text)));
    }
    if (option.kind == OptionKind::kCount && value < 0) {
      return absl::InvalidArgumentError(absl::StrCat("flag --", option.name, " must be 0 or more"));
    }
    if (option.kind == OptionKind::kDevice && (value < 0 || value > UINT32_MAX)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "flag --", option.name, " must be a device id, 0 or more, not ", value));
    }
  }
  return absl::OkStatus();
}

}  // namespace warpscope
