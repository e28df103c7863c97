// Loads libcupti with dlopen and evaluates PM counter data images with its host API
// (cuptiProfilerHostInitialize -> ConfigAddMetrics -> EvaluateToGpuValues per sample).
#include "analyzers/lib/cupti_host.h"

#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>
#include <utility>

#include <cupti_profiler_host.h>
#include <cupti_result.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collectors/common/cupti_params.h"

namespace warpscope {
namespace {

// The host API entry points, resolved by name from the loaded library.
struct CuptiHostFunctions {
  decltype(&cuptiProfilerHostInitialize) initialize = nullptr;
  decltype(&cuptiProfilerHostDeinitialize) deinitialize = nullptr;
  decltype(&cuptiProfilerHostConfigAddMetrics) add_metrics = nullptr;
  decltype(&cuptiProfilerHostEvaluateToGpuValues) evaluate = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  std::string path;
};

std::vector<std::string> CandidatePaths() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv(kCuptiLibraryEnv); env != nullptr && *env != '\0') {
    paths.emplace_back(env);
    return paths;  // an explicit choice is the only one tried
  }
  paths.emplace_back("libcupti.so.13");
  paths.emplace_back("libcupti.so");
  std::vector<std::string> roots;
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0') {
    roots.emplace_back(home);
  }
  roots.emplace_back("/usr/local/cuda");
  for (const std::string& root : roots) {
    for (const char* dir : {"/extras/CUPTI/lib64/", "/lib64/", "/targets/x86_64-linux/lib/"}) {
      paths.push_back(absl::StrCat(root, dir, "libcupti.so.13"));
      paths.push_back(absl::StrCat(root, dir, "libcupti.so"));
    }
  }
  return paths;
}

absl::StatusOr<CuptiHostFunctions> LoadCuptiHost() {
  std::vector<std::string> tried;
  for (const std::string& path : CandidatePaths()) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      tried.push_back(path);
      continue;
    }
    CuptiHostFunctions f;
    f.path = path;
    auto resolve = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
      return fn != nullptr;
    };
    if (!resolve(f.initialize, "cuptiProfilerHostInitialize") ||
        !resolve(f.deinitialize, "cuptiProfilerHostDeinitialize") ||
        !resolve(f.add_metrics, "cuptiProfilerHostConfigAddMetrics") ||
        !resolve(f.evaluate, "cuptiProfilerHostEvaluateToGpuValues") ||
        !resolve(f.result_string, "cuptiGetResultString")) {
      dlclose(handle);
      return absl::FailedPreconditionError(absl::StrCat(
          path, " has no PM sampling host API (cuptiProfilerHost*): it needs CUPTI from "
                "CUDA 12.6 or newer"));
    }
    return f;  // the library stays loaded for the life of the process
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "this trace holds raw PM samples, and evaluating them needs CUPTI's host library, "
      "which was not found (tried ",
      absl::StrJoin(tried, ", "),
      "); install the CUDA toolkit or `pip install nvidia-cuda-cupti-cu13` and set ",
      kCuptiLibraryEnv, "=/path/to/libcupti.so.13"));
}

const absl::StatusOr<CuptiHostFunctions>& Functions() {
  static const absl::StatusOr<CuptiHostFunctions>* loaded =
      new absl::StatusOr<CuptiHostFunctions>(LoadCuptiHost());
  return *loaded;
}

std::string ResultName(const CuptiHostFunctions& f, CUptiResult r) {
  const char* text = nullptr;
  if (f.result_string(r, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown error";
  return absl::StrCat(text, " (", static_cast<int>(r), ")");
}

class CuptiPmCounterDataEvaluator final : public PmCounterDataEvaluator {
 public:
  CuptiPmCounterDataEvaluator(const CuptiHostFunctions& f, CUpti_Profiler_Host_Object* host,
                              std::vector<std::string> metric_names)
      : f_(f), host_(host), metric_storage_(std::move(metric_names)) {
    for (const std::string& m : metric_storage_) metric_names_.push_back(m.c_str());
  }
  ~CuptiPmCounterDataEvaluator() override {
    auto p = CuptiParams<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
    p.pHostObject = host_;
    f_.deinitialize(&p);
  }

  absl::Status Evaluate(std::span<const uint8_t> image, uint32_t sample_index,
                        std::vector<double>* values) override {
    values->assign(metric_names_.size(), 0.0);
    auto p = CuptiParams<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
    p.pHostObject = host_;
    p.pCounterDataImage = image.data();
    p.counterDataImageSize = image.size();
    p.rangeIndex = sample_index;
    p.ppMetricNames = metric_names_.data();
    p.numMetrics = metric_names_.size();
    p.pMetricValues = values->data();
    if (CUptiResult r = f_.evaluate(&p); r != CUPTI_SUCCESS) {
      return absl::DataLossError(absl::StrCat("cuptiProfilerHostEvaluateToGpuValues(sample ",
                                              sample_index, "): ", ResultName(f_, r)));
    }
    return absl::OkStatus();
  }

 private:
  const CuptiHostFunctions& f_;
  CUpti_Profiler_Host_Object* host_;
  std::vector<std::string> metric_storage_;
  std::vector<const char*> metric_names_;
};

}  // namespace

absl::StatusOr<std::string> CuptiHostLibraryPath() {
  const absl::StatusOr<CuptiHostFunctions>& f = Functions();
  if (!f.ok()) return f.status();
  return f->path;
}

absl::StatusOr<std::unique_ptr<PmCounterDataEvaluator>> MakePmCounterDataEvaluator(
    std::string_view chip_name, std::span<const uint8_t> counter_availability,
    const std::vector<std::string>& metric_names) {
  const absl::StatusOr<CuptiHostFunctions>& loaded = Functions();
  if (!loaded.ok()) return loaded.status();
  const CuptiHostFunctions& f = *loaded;
  const std::string chip(chip_name);
  auto init = CuptiParams<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
  init.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
  init.pChipName = chip.c_str();
  init.pCounterAvailabilityImage =
      counter_availability.empty() ? nullptr : counter_availability.data();
  if (CUptiResult r = f.initialize(&init); r != CUPTI_SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cuptiProfilerHostInitialize for chip '", chip, "' failed: ", ResultName(f, r),
        "; the CUPTI at ", f.path, " may be older than the one that recorded the trace"));
  }
  auto evaluator =
      std::make_unique<CuptiPmCounterDataEvaluator>(f, init.pHostObject, metric_names);
  std::vector<const char*> names;
  for (const std::string& m : metric_names) names.push_back(m.c_str());
  auto add = CuptiParams<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
  add.pHostObject = init.pHostObject;
  add.ppMetricNames = names.data();
  add.numMetrics = names.size();
  if (CUptiResult r = f.add_metrics(&add); r != CUPTI_SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat("cuptiProfilerHostConfigAddMetrics on chip '",
                                                   chip, "' failed: ", ResultName(f, r)));
  }
  return evaluator;
}

}  // namespace warpscope
