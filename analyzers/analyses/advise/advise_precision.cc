// The precision rule of `warpscope advise` (docs/advise.md, "Precision"): FP32 matrix work on
// the SIMT cores that tensor cores could run (measures/kernel_precision.h reads it from kernel
// names), per NVTX place, with the GPU time TF32 or BF16 would save by a conservative model of
// the architecture's peaks; FP64 matrix work is left alone, with a note saying why.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/advise/advise_timeline.h"
#include "analyzers/measures/call_sites.h"
#include "analyzers/measures/kernel_precision.h"

namespace warpscope::advise_internal {
namespace {

// The model (docs/advise.md, "Precision"): a launch on tensor cores runs at most the peak
// ratio faster; it is taken to reach half of it (tensor-core GEMMs keep less of their peak
// than SIMT ones: memory, latency and the power limit weigh more at 8x the math rate), and no
// launch to end in less than 3 us (fill, drain, epilogue), nor to grow.
constexpr double kTensorEfficiency = 0.5;
constexpr uint64_t kMinTensorKernelNs = 3'000;
// A device whose FP32 SIMT matrix time is under this share of its matrix time already runs on
// tensor cores: the FP32 left is taken as chosen.
constexpr double kMinFp32MatrixShare = 0.1;
constexpr size_t kSitesShown = 3;

// The GPU time a launch of `ns` saves on a unit `peak_ratio` times FP32's peak.
uint64_t Saving(uint64_t ns, double peak_ratio) {
  const double ratio = peak_ratio * kTensorEfficiency;
  if (ratio <= 1) return 0;
  const double after = std::max(static_cast<double>(ns) / ratio,
                                static_cast<double>(std::min(ns, kMinTensorKernelNs)));
  return ns - std::min(ns, NsFromDouble(after));
}

// FP32 matrix work launched from one NVTX place, in the steady state or before it.
struct Fp32Place {
  uint64_t ns = 0, attention_ns = 0, long_reduction_ns = 0, launches = 0, thread = 0;
  uint64_t tf32_saving_ns = 0, bf16_saving_ns = 0;
  bool cudnn = false;
  std::set<uint32_t> streams;
  std::map<std::string, uint64_t> ns_by_kernel;  // display names
  std::vector<uint32_t> correlation_ids;
  CallSiteGroups sites;
  const KernelEvent* worst = nullptr;
};
using PlaceKey = std::tuple<uint32_t, std::string, bool>;  // device, NVTX path, one-time

// Kernel time per math class on one device.
struct DeviceMath {
  std::optional<MathPeaks> peaks;
  std::string arch;  // "sm_90"
  uint64_t kernel_ns = 0, fp32_ns = 0, tensor_ns = 0, fp64_ns = 0, unknown_ns = 0;
  uint64_t fp64_launches = 0;
  std::map<KernelMath, uint64_t> tensor_by_class;
};

struct PrecisionTally {
  std::map<PlaceKey, Fp32Place> places;
  std::map<uint32_t, DeviceMath> devices;
  bool pytorch = false;  // PyTorch's or torch.compile's kernels ran
};

DeviceMath DeviceMathOf(const TraceModel& model, uint32_t device) {
  DeviceMath d;
  if (const DeviceInfo* info = model.FindDevice(device); info != nullptr) {
    d.peaks = MathPeaksOf(info->compute_capability_major, info->compute_capability_minor);
    d.arch = absl::StrCat("sm_", info->compute_capability_major, info->compute_capability_minor);
  }
  return d;
}

void AddFp32Launch(const AdviseTimeline& timeline, const KernelEvent& k, const KernelMathClass& c,
                   const DeviceMath& d, PrecisionTally& tally) {
  const TraceModel& model = timeline.model();
  const ApiCallEvent* api = timeline.LaunchOf(k.correlation_id);
  const uint64_t issued = api != nullptr ? api->start_ns : k.start_ns;
  std::string path = api != nullptr ? timeline.PathAt(api->thread_id, api->start_ns) : "";
  Fp32Place& p = tally.places[{k.device_id, std::move(path), issued < timeline.steady_begin_ns()}];
  p.ns += k.duration_ns, p.launches++;
  if (api != nullptr) p.thread = api->thread_id;
  p.streams.insert(k.stream_id);
  p.ns_by_kernel[KernelDisplayName(k)] += k.duration_ns;
  p.correlation_ids.push_back(k.correlation_id);
  if (!model.api_stacks.empty()) p.sites.Add(model, k.correlation_id, k.name, k.duration_ns);
  if (p.worst == nullptr || k.duration_ns > p.worst->duration_ns) p.worst = &k;
  if (c.long_reduction) p.long_reduction_ns += k.duration_ns;
  p.cudnn |= c.scheme.find("cuDNN") != std::string_view::npos ||
             k.name.find("cudnn") != std::string_view::npos;
  if (c.math == KernelMath::kFp32SimtAttention) p.attention_ns += k.duration_ns;
  if (!d.peaks.has_value() || d.peaks->fp32_simt <= 0) return;
  const double fp32 = d.peaks->fp32_simt;
  // The TF32 flags move GEMMs and convolutions; fused FP32 attention only moves to BF16/FP16.
  if (c.math == KernelMath::kFp32Simt) {
    p.tf32_saving_ns += Saving(k.duration_ns, d.peaks->tf32_tensor / fp32);
  }
  p.bf16_saving_ns += Saving(k.duration_ns, d.peaks->bf16_tensor / fp32);
}

PrecisionTally Tally(const AdviseTimeline& timeline) {
  const TraceModel& model = timeline.model();
  PrecisionTally tally;
  KernelMathClassifier classes;
  for (const auto& [device, work] : timeline.work_by_device()) {
    DeviceMath& d = tally.devices[device] = DeviceMathOf(model, device);
    for (const GpuWork& w : work) {
      if (w.kind != WorkKind::kKernel) continue;
      const KernelEvent& k = model.kernels[w.index];
      const KernelMathClass& c = classes.Classify(k.name);
      d.kernel_ns += k.duration_ns;
      tally.pytorch |= c.scheme.starts_with("PyTorch") || c.scheme.starts_with("Triton");
      if (c.math == KernelMath::kUnknown) d.unknown_ns += k.duration_ns;
      if (c.math == KernelMath::kFp64) d.fp64_ns += k.duration_ns, d.fp64_launches++;
      if (OnTensorCores(c.math)) {
        d.tensor_ns += k.duration_ns;
        d.tensor_by_class[c.math] += k.duration_ns;
      }
      if (!IsFp32Simt(c.math)) continue;
      d.fp32_ns += k.duration_ns;
      AddFp32Launch(timeline, k, c, d, tally);
    }
  }
  return tally;
}

// Whether the program runs under PyTorch: its kernels (Tally), its Python files or native
// libraries on the recorded stacks, or its operator ranges (emit_nvtx).
bool PyTorchSeen(const TraceModel& model, bool torch_kernels) {
  if (torch_kernels) return true;
  for (const StackFrameInfo& f : model.stack_frames) {
    if (f.file.find("/torch/") != std::string_view::npos) return true;
    const std::string base = PathBaseName(f.file);
    if (base.starts_with("libtorch") || base.starts_with("libc10")) return true;
  }
  for (const NvtxRange& r : model.nvtx_ranges) {
    if (r.name.starts_with("aten::")) return true;
  }
  return false;
}

double Share(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0 : static_cast<double>(part) / static_cast<double>(whole);
}

std::string Ms(uint64_t ns) { return FormatDuration(static_cast<double>(ns)); }

// Whether TF32 is worth it on the device (the model saves anything); else BF16/FP16 is the fix.
bool Tf32Pays(const DeviceMath& d) {
  return d.peaks.has_value() && d.peaks->fp32_simt > 0 &&
         d.peaks->tf32_tensor / d.peaks->fp32_simt * kTensorEfficiency > 1;
}

std::string FixText(bool pytorch, bool tf32, const Fp32Place& p) {
  std::string fix;
  if (pytorch) {
    if (tf32) {
      fix = "Let FP32 matmuls run as TF32: torch.backends.cuda.matmul.allow_tf32 = True, or "
            "torch.set_float32_matmul_precision(\"high\")";
      if (p.cudnn) {
        absl::StrAppend(&fix, "; convolutions: torch.backends.cudnn.allow_tf32 = True (the "
                              "default: check nothing sets it False, nor NVIDIA_TF32_OVERRIDE=0)");
      }
      absl::StrAppend(&fix, ". Or run the model under ");
    } else {
      fix = "Run the model under ";
    }
    absl::StrAppend(&fix, "torch.autocast(\"cuda\", dtype=torch.bfloat16)",
                    p.attention_ns > 0 ? ", which also moves the FP32 attention" : "", ".");
  } else {
    if (tf32) {
      fix = "Let cuBLAS use TF32 tensor cores: cublasSetMathMode(handle, "
            "CUBLAS_TF32_TENSOR_OP_MATH), or compute type CUBLAS_COMPUTE_32F_FAST_TF32 in "
            "cublasGemmEx / cublasLtMatmulDescCreate";
      if (p.cudnn) {
        absl::StrAppend(&fix, "; cuDNN: math type CUDNN_DEFAULT_MATH or CUDNN_TENSOR_OP_MATH, "
                              "not CUDNN_FMA_MATH, and no NVIDIA_TF32_OVERRIDE=0");
      }
      absl::StrAppend(&fix, ". Or store ");
    } else {
      fix = "Store ";
    }
    absl::StrAppend(&fix, "the operands in BF16 or FP16 (CUDA_R_16BF with CUBLAS_COMPUTE_32F); "
                          "a cutlass kernel of the program's own: its tensor-op variant.");
  }
  absl::StrAppend(&fix, " ", tf32 ? "TF32 keeps 10 mantissa bits of the inputs" : "BF16 keeps 7",
                  " and accumulates in FP32: compare the outputs or the loss before keeping it.");
  return fix;
}

std::string TopSites(const Fp32Place& p) {
  std::vector<const CallSiteGroup*> sites;
  for (const auto& [key, group] : p.sites.groups()) sites.push_back(&group);
  std::sort(sites.begin(), sites.end(), [](const CallSiteGroup* a, const CallSiteGroup* b) {
    return a->total_ns > b->total_ns;
  });
  std::vector<std::string> shown;
  for (size_t i = 0; i < sites.size() && i < kSitesShown; ++i) {
    shown.push_back(absl::StrCat(sites[i]->site.Display(), " ", Ms(sites[i]->total_ns)));
  }
  return absl::StrJoin(shown, ", ");
}

std::string Evidence(const Fp32Place& p, const DeviceMath& d, bool tf32) {
  const auto top = std::max_element(p.ns_by_kernel.begin(), p.ns_by_kernel.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
  std::string text = absl::StrFormat(
      "%s of FP32 matrix work on the SIMT cores in %d launches (%.0f%% of the kernel time), "
      "most in %s (%s)",
      Ms(p.ns), static_cast<int>(p.launches), 100 * Share(p.ns, d.kernel_ns), top->first,
      Ms(top->second));
  if (p.attention_ns > 0) {
    absl::StrAppend(&text, "; ", Ms(p.attention_ns), " of it FP32 attention, which TF32 leaves");
  }
  if (const std::string sites = TopSites(p); !sites.empty()) {
    absl::StrAppend(&text, "; sites: ", sites);
  }
  const MathPeaks& peaks = *d.peaks;
  absl::StrAppendFormat(
      &text,
      "; %s peaks over FP32: TF32 %.0fx, BF16 %.0fx, taken at half per launch and no launch "
      "under 3 us: TF32 would save %s, BF16 %s",
      d.arch, peaks.tf32_tensor / peaks.fp32_simt, peaks.bf16_tensor / peaks.fp32_simt,
      tf32 ? Ms(p.tf32_saving_ns) : "nothing", Ms(p.bf16_saving_ns));
  if (p.long_reduction_ns > 0) {
    absl::StrAppendFormat(&text,
                          "; %.0f%% is split-K GEMMs (long reductions), where rounding the "
                          "inputs weighs most",
                          100 * Share(p.long_reduction_ns, p.ns));
  }
  absl::StrAppendFormat(&text, "; kernel names tell the math of %.0f%% of the kernel time",
                        100 * (1 - Share(d.unknown_ns, d.kernel_ns)));
  return text;
}

AdviseFinding PlaceFinding(const AdviseTimeline& timeline, const PlaceKey& key,
                           const Fp32Place& p, const DeviceMath& d, bool pytorch) {
  const auto& [device, path, once] = key;
  const bool tf32 = Tf32Pays(d);
  AdviseFinding f;
  f.rule = std::string(kRulePrecision);
  f.cost_ns = tf32 ? p.tf32_saving_ns : p.bf16_saving_ns;
  f.occurrences = p.launches;
  f.device_id = device;
  f.nvtx_path = path;
  f.kernel = std::max_element(p.ns_by_kernel.begin(), p.ns_by_kernel.end(),
                              [](const auto& a, const auto& b) { return a.second < b.second; })
                 ->first;
  f.stream = absl::StrJoin(p.streams, ",");
  f.where = timeline.CallSiteText(p.correlation_ids);
  timeline.DescribeThread(p.thread, &f);
  f.title = absl::StrCat("FP32 matrix work on the SIMT cores that ", tf32 ? "TF32" : "BF16",
                         " tensor cores could run");
  if (!path.empty()) absl::StrAppend(&f.title, " in ", path);
  if (!f.where.empty()) absl::StrAppend(&f.title, " at ", f.where);
  f.one_time = once;
  if (once) absl::StrAppend(&f.title, ", before the steady state (one-time)");
  f.evidence = Evidence(p, d, tf32);
  f.fix = FixText(pytorch, tf32, p);
  f.worst_begin_ns = p.worst->start_ns;
  f.worst_end_ns = p.worst->end_ns();
  return f;
}

// Notes on a device's math that make no finding; false when its FP32 work is left alone.
bool DeviceNotes(uint32_t device, const DeviceMath& d, std::vector<std::string>* notes) {
  if (d.fp64_ns > 0) {
    notes->push_back(absl::StrFormat(
        "device %d: %s of FP64 matrix work in %d launches (%.0f%% of the kernel time): double "
        "precision is a numerical choice, so no tensor-core advice for it (TF32 or BF16 would "
        "change the results)",
        device, Ms(d.fp64_ns), static_cast<int>(d.fp64_launches),
        100 * Share(d.fp64_ns, d.kernel_ns)));
  }
  if (d.fp32_ns == 0) return false;
  if (Share(d.fp32_ns, d.fp32_ns + d.tensor_ns) < kMinFp32MatrixShare) {
    std::vector<std::string> on;
    for (const auto& [math, ns] : d.tensor_by_class) on.push_back(std::string(KernelMathName(math)));
    notes->push_back(absl::StrFormat(
        "device %d: matrix work runs on tensor cores (%s); the %s of FP32 matrix work left "
        "(%.0f%%) is taken as chosen",
        device, absl::StrJoin(on, ", "), Ms(d.fp32_ns), 100 * Share(d.fp32_ns, d.fp32_ns + d.tensor_ns)));
    return false;
  }
  if (!d.peaks.has_value()) {
    notes->push_back(absl::StrFormat(
        "device %d: %s of FP32 matrix work on the SIMT cores, but no math peaks are known for "
        "%s: no saving estimated",
        device, Ms(d.fp32_ns), d.arch.empty() ? "its architecture" : d.arch));
    return false;
  }
  return true;
}

}  // namespace

void FindFp32MatrixWork(const AdviseTimeline& timeline, std::vector<AdviseFinding>* findings,
                        std::vector<std::string>* notes) {
  const PrecisionTally tally = Tally(timeline);
  const bool pytorch = PyTorchSeen(timeline.model(), tally.pytorch);
  std::set<uint32_t> advised;
  for (const auto& [device, d] : tally.devices) {
    if (DeviceNotes(device, d, notes)) advised.insert(device);
  }
  for (const auto& [key, place] : tally.places) {
    const uint32_t device = std::get<0>(key);
    if (advised.count(device) == 0) continue;
    findings->push_back(PlaceFinding(timeline, key, place, tally.devices.at(device), pytorch));
  }
}

}  // namespace warpscope::advise_internal
