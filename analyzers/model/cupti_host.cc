// Loads libcupti with dlopen and evaluates PM counter data images with its host API
// (cuptiProfilerHostInitialize -> ConfigAddMetrics -> EvaluateToGpuValues per sample).
#include "analyzers/model/cupti_host.h"

// A build without the CUDA toolkit (WARPSCOPE_ANALYZERS_ONLY) has no CUPTI declarations: the
// entry points at the end of this file then say that they need CUPTI.
#if __has_include(<cupti_profiler_host.h>) && !defined(WARPSCOPE_WITHOUT_CUPTI)
#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>
#include <utility>

#include <cupti_pcsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_result.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collectors/common/cupti_params.h"

namespace warpscope {
namespace {

// libcupti, loaded once for the life of the process.
struct CuptiLibrary {
  void* handle = nullptr;
  std::string path;
  decltype(&cuptiGetResultString) result_string = nullptr;
};

// The PM sampling host API entry points (cupti_profiler_host.h).
struct CuptiHostFunctions {
  decltype(&cuptiProfilerHostInitialize) initialize = nullptr;
  decltype(&cuptiProfilerHostDeinitialize) deinitialize = nullptr;
  decltype(&cuptiProfilerHostConfigAddMetrics) add_metrics = nullptr;
  decltype(&cuptiProfilerHostEvaluateToGpuValues) evaluate = nullptr;
  decltype(&cuptiProfilerHostGetConfigImageSize) config_image_size = nullptr;
  decltype(&cuptiProfilerHostGetConfigImage) config_image = nullptr;
  decltype(&cuptiProfilerHostGetNumOfPasses) passes = nullptr;
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

template <typename Fn>
bool Resolve(void* handle, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return fn != nullptr;
}

absl::StatusOr<CuptiLibrary> LoadCuptiLibrary() {
  std::vector<std::string> tried;
  for (const std::string& path : CandidatePaths()) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      tried.push_back(path);
      continue;
    }
    CuptiLibrary lib{handle, path, nullptr};
    if (!Resolve(handle, lib.result_string, "cuptiGetResultString")) {
      dlclose(handle);
      tried.push_back(absl::StrCat(path, " (not CUPTI)"));
      continue;
    }
    return lib;  // the library stays loaded for the life of the process
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "CUPTI's library was not found (tried ", absl::StrJoin(tried, ", "),
      "); install the CUDA toolkit or `pip install nvidia-cuda-cupti-cu13` and set ",
      kCuptiLibraryEnv, "=/path/to/libcupti.so.13"));
}

const absl::StatusOr<CuptiLibrary>& Library() {
  static const absl::StatusOr<CuptiLibrary>* loaded =
      new absl::StatusOr<CuptiLibrary>(LoadCuptiLibrary());
  return *loaded;
}

absl::StatusOr<CuptiHostFunctions> LoadCuptiHost() {
  const absl::StatusOr<CuptiLibrary>& lib = Library();
  if (!lib.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this trace holds raw PM samples, and evaluating them needs CUPTI's host library: ",
        lib.status().message()));
  }
  CuptiHostFunctions f;
  f.path = lib->path;
  f.result_string = lib->result_string;
  if (!Resolve(lib->handle, f.initialize, "cuptiProfilerHostInitialize") ||
      !Resolve(lib->handle, f.deinitialize, "cuptiProfilerHostDeinitialize") ||
      !Resolve(lib->handle, f.add_metrics, "cuptiProfilerHostConfigAddMetrics") ||
      !Resolve(lib->handle, f.evaluate, "cuptiProfilerHostEvaluateToGpuValues") ||
      !Resolve(lib->handle, f.config_image_size, "cuptiProfilerHostGetConfigImageSize") ||
      !Resolve(lib->handle, f.config_image, "cuptiProfilerHostGetConfigImage") ||
      !Resolve(lib->handle, f.passes, "cuptiProfilerHostGetNumOfPasses")) {
    return absl::FailedPreconditionError(absl::StrCat(
        lib->path, " has no PM sampling host API (cuptiProfilerHost*): it needs CUPTI from "
                   "CUDA 12.6 or newer"));
  }
  return f;
}

const absl::StatusOr<CuptiHostFunctions>& Functions() {
  static const absl::StatusOr<CuptiHostFunctions>* loaded =
      new absl::StatusOr<CuptiHostFunctions>(LoadCuptiHost());
  return *loaded;
}

template <typename Lib>
std::string ResultName(const Lib& f, CUptiResult r) {
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

  CUpti_Profiler_Host_Object* host() const { return host_; }

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
  const absl::StatusOr<CuptiLibrary>& lib = Library();
  if (!lib.ok()) return lib.status();
  return lib->path;
}

absl::StatusOr<SassSourceLine> CuptiSassToSource(std::span<const uint8_t> cubin,
                                                 const std::string& function_name,
                                                 uint64_t pc_offset) {
  using CorrelateFn = decltype(&cuptiGetSassToSourceCorrelation);
  static const absl::StatusOr<CorrelateFn>* correlate = [] {
    const absl::StatusOr<CuptiLibrary>& lib = Library();
    if (!lib.ok()) return new absl::StatusOr<CorrelateFn>(lib.status());
    CorrelateFn fn = nullptr;
    if (!Resolve(lib->handle, fn, "cuptiGetSassToSourceCorrelation")) {
      return new absl::StatusOr<CorrelateFn>(absl::FailedPreconditionError(absl::StrCat(
          lib->path, " has no cuptiGetSassToSourceCorrelation: it needs CUPTI from CUDA 11.3 "
                     "or newer")));
    }
    return new absl::StatusOr<CorrelateFn>(fn);
  }();
  if (!correlate->ok()) return correlate->status();
  CUpti_GetSassToSourceCorrelationParams p{};
  p.size = CUpti_GetSassToSourceCorrelationParamsSize;
  p.cubin = cubin.data();
  p.cubinSize = cubin.size();
  p.functionName = function_name.c_str();
  p.pcOffset = pc_offset;
  const CUptiResult r = (**correlate)(&p);
  SassSourceLine out;
  if (p.fileName != nullptr) out.file = p.fileName;
  if (p.dirName != nullptr) out.dir = p.dirName;
  // CUPTI allocates both strings with malloc and leaves them to the caller.
  std::free(p.fileName);
  std::free(p.dirName);
  if (r != CUPTI_SUCCESS) {
    return absl::NotFoundError(absl::StrCat("cuptiGetSassToSourceCorrelation(", function_name,
                                            " +", pc_offset, "): ",
                                            ResultName(*Library(), r)));
  }
  out.line = p.lineNumber;
  return out;
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

absl::StatusOr<size_t> CuptiPmSamplingPasses(std::string_view chip_name,
                                             const std::vector<std::string>& metric_names) {
  absl::StatusOr<std::unique_ptr<PmCounterDataEvaluator>> made =
      MakePmCounterDataEvaluator(chip_name, {}, metric_names);
  if (!made.ok()) return made.status();
  const CuptiHostFunctions& f = *Functions();
  auto* host = static_cast<CuptiPmCounterDataEvaluator*>(made->get())->host();
  auto size = CuptiParams<CUpti_Profiler_Host_GetConfigImageSize_Params>(
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
  size.pHostObject = host;
  if (CUptiResult r = f.config_image_size(&size); r != CUPTI_SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuptiProfilerHostGetConfigImageSize: ", ResultName(f, r)));
  }
  std::vector<uint8_t> image(size.configImageSize);
  auto get = CuptiParams<CUpti_Profiler_Host_GetConfigImage_Params>(
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
  get.pHostObject = host;
  get.configImageSize = image.size();
  get.pConfigImage = image.data();
  if (CUptiResult r = f.config_image(&get); r != CUPTI_SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuptiProfilerHostGetConfigImage: ", ResultName(f, r)));
  }
  auto passes = CuptiParams<CUpti_Profiler_Host_GetNumOfPasses_Params>(
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
  passes.configImageSize = image.size();
  passes.pConfigImage = image.data();
  if (CUptiResult r = f.passes(&passes); r != CUPTI_SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuptiProfilerHostGetNumOfPasses: ", ResultName(f, r)));
  }
  return passes.numOfPasses;
}

}  // namespace warpscope

#else  // no CUPTI headers

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace warpscope {
namespace {

absl::Status NeedsCupti(const char* what) {
  return absl::UnimplementedError(absl::StrCat(
      what, " needs CUPTI, and this warpscope was built without the CUDA toolkit "
            "(WARPSCOPE_ANALYZERS_ONLY); use a warpscope built with CUDA 13"));
}

}  // namespace

absl::StatusOr<std::string> CuptiHostLibraryPath() { return NeedsCupti("loading libcupti"); }

absl::StatusOr<SassSourceLine> CuptiSassToSource(std::span<const uint8_t>, const std::string&,
                                                 uint64_t) {
  return NeedsCupti("mapping PCs to source lines");
}

absl::StatusOr<std::unique_ptr<PmCounterDataEvaluator>> MakePmCounterDataEvaluator(
    std::string_view, std::span<const uint8_t>, const std::vector<std::string>&) {
  return NeedsCupti("evaluating raw PM samples (recorded with WARPSCOPE_PM_EVALUATE=offline)");
}

absl::StatusOr<size_t> CuptiPmSamplingPasses(std::string_view, const std::vector<std::string>&) {
  return NeedsCupti("counting PM sampling passes");
}

}  // namespace warpscope

#endif
