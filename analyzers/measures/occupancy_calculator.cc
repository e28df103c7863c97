// Theoretical occupancy via cuda_occupancy.h (the calculator CUDA's runtime uses), and advice
// found by re-running that calculator on varied registers, shared memory and block size.
#include "analyzers/measures/occupancy_calculator.h"

// A build without the CUDA toolkit (WARPSCOPE_ANALYZERS_ONLY) has no calculator: theoretical
// occupancy then says so, and everything else works.
#if __has_include(<cuda_occupancy.h>) && !defined(WARPSCOPE_WITHOUT_CUDA_OCCUPANCY)
#include <cuda_occupancy.h>
#define WARPSCOPE_HAVE_CUDA_OCCUPANCY 1
#endif

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzers/model/trace_limits.h"

namespace warpscope {
#ifdef WARPSCOPE_HAVE_CUDA_OCCUPANCY
namespace {

// Per-architecture limits used where the Device packet leaves a field at 0. Values are those
// cudaGetDeviceProperties reports on the reference parts (A100, A10/RTX 30, L4/RTX 40,
// H100/H200, B200, RTX 50).
struct ArchDefaults {
  int major, minor;
  int max_threads_per_sm;
  uint64_t smem_per_sm;
  uint64_t smem_per_block_optin;
};
constexpr ArchDefaults kArchDefaults[] = {
    {8, 0, 2048, 167936, 166912},  {8, 6, 1536, 102400, 101376}, {8, 7, 2048, 167936, 166912},
    {8, 9, 1536, 102400, 101376},  {9, 0, 2048, 233472, 232448}, {10, 0, 2048, 233472, 232448},
    {12, 0, 1536, 102400, 101376},
};

const ArchDefaults* FindArch(int major, int minor) {
  const ArchDefaults* same_major = nullptr;
  for (const ArchDefaults& a : kArchDefaults) {
    if (a.major == major && a.minor == minor) return &a;
    if (a.major == major && same_major == nullptr) same_major = &a;
  }
  return same_major;
}

template <typename T>
T OrDefault(uint64_t value, T fallback) {
  return value != 0 ? static_cast<T>(value) : fallback;
}

// The calculator's three inputs, built once per launch and then varied by the advice search.
struct CalculatorInputs {
  cudaOccDeviceProp prop;
  cudaOccFuncAttributes attrs;
  cudaOccDeviceState state;
  int block_size = 0;
  size_t dynamic_smem = 0;
  int sm_count = 0;
  uint64_t grid_blocks = 0;
};

// The calculator's device properties: the trace's limits, else the architecture's defaults.
void FillDeviceProp(const DeviceInfo& device, int major, int minor, const ArchDefaults* arch,
                    cudaOccDeviceProp& p) {
  const int warp = OrDefault<int>(device.threads_per_warp, 32);
  p.computeMajor = major;
  p.computeMinor = minor;
  p.maxThreadsPerBlock = OrDefault<int>(device.max_threads_per_block, 1024);
  p.maxThreadsPerMultiprocessor = device.max_warps_per_sm != 0
                                      ? static_cast<int>(device.max_warps_per_sm) * warp
                                      : arch->max_threads_per_sm;
  p.regsPerBlock = OrDefault<int>(device.max_registers_per_block, 65536);
  p.regsPerMultiprocessor = OrDefault<int>(device.max_registers_per_sm, 65536);
  p.warpSize = warp;
  p.sharedMemPerBlock = OrDefault<size_t>(device.max_shared_memory_per_block, 49152);
  p.sharedMemPerMultiprocessor =
      OrDefault<size_t>(device.max_shared_memory_per_sm, arch ? arch->smem_per_sm : 0);
  p.numSms = OrDefault<int>(device.sm_count, 1);
  p.sharedMemPerBlockOptin =
      OrDefault<size_t>(device.max_shared_memory_per_block_optin,
                        arch ? arch->smem_per_block_optin : p.sharedMemPerMultiprocessor);
  // CUPTI's Device record lacks the reserved size; every part from sm_80 on reserves 1 KiB.
  p.reservedSharedMemPerBlock =
      OrDefault<size_t>(device.reserved_shared_memory_per_block, major >= 8 ? 1024 : 0);
}

absl::StatusOr<CalculatorInputs> BuildInputs(const DeviceInfo& device, const LaunchConfig& launch) {
  CalculatorInputs in;
  // The calculator computes in int: values beyond these bounds would overflow it.
  if (std::string problem = DeviceLimitsProblem(device); !problem.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ", device.id, " is unusable in the trace: ", problem));
  }
  if (std::string problem = LaunchConfigProblem(launch); !problem.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("launch config ", launch.id, " is unusable in the trace: ", problem));
  }
  const int major = static_cast<int>(device.compute_capability_major);
  const int minor = static_cast<int>(device.compute_capability_minor);
  if (major == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device ", device.id, " has no compute capability in the trace; cannot compute occupancy"));
  }
  const ArchDefaults* arch = FindArch(major, minor);
  if (arch == nullptr && (device.max_warps_per_sm == 0 || device.max_shared_memory_per_sm == 0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "compute capability %d.%d: the trace lacks the device limits and warpscope knows no "
        "defaults for it",
        major, minor));
  }
  cudaOccDeviceProp& p = in.prop;
  FillDeviceProp(device, major, minor, arch, p);

  const uint64_t block =
      uint64_t{launch.block_x} * std::max(1u, launch.block_y) * std::max(1u, launch.block_z);
  if (launch.block_x == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("launch config ", launch.id, " has no valid block size"));
  }
  in.block_size = static_cast<int>(block);
  in.dynamic_smem = launch.dynamic_shared_memory;
  in.sm_count = p.numSms;
  in.grid_blocks =
      uint64_t{launch.grid_x} * std::max(1u, launch.grid_y) * std::max(1u, launch.grid_z);

  cudaOccFuncAttributes& a = in.attrs;
  a.maxThreadsPerBlock = p.maxThreadsPerBlock;  // launch bounds are not in the trace
  a.numRegs = static_cast<int>(launch.registers_per_thread);
  a.sharedSizeBytes = launch.static_shared_memory;
  a.partitionedGCConfig = PARTITIONED_GC_OFF;
  // A launch that ran with more than the default per-block limit must have opted in.
  const bool opt_in =
      launch.shmem_limit_config == 1 ||
      uint64_t{launch.static_shared_memory} + launch.dynamic_shared_memory > p.sharedMemPerBlock;
  a.shmemLimitConfig = opt_in ? FUNC_SHMEM_LIMIT_OPTIN : FUNC_SHMEM_LIMIT_DEFAULT;
  a.maxDynamicSharedSizeBytes =
      opt_in
          ? p.sharedMemPerBlockOptin - std::min<size_t>(a.sharedSizeBytes, p.sharedMemPerBlockOptin)
          : in.dynamic_smem;
  a.numBlockBarriers = 1;  // what cudaOccFuncAttributes(cudaFuncAttributes) assumes
  a.virtualResourceCount = 0;

  in.state.cacheConfig = CACHE_PREFER_NONE;
  const uint32_t carveout = launch.shared_memory_carveout_requested;
  in.state.carveoutConfig =
      (carveout == 0 || carveout > 100) ? SHAREDMEM_CARVEOUT_DEFAULT : static_cast<int>(carveout);
  return in;
}

absl::StatusOr<TheoreticalOccupancy> Run(const CalculatorInputs& in) {
  cudaOccResult r{};
  const cudaOccError err = cudaOccMaxActiveBlocksPerMultiprocessor(
      &r, &in.prop, &in.attrs, &in.state, in.block_size, in.dynamic_smem);
  if (err != CUDA_OCC_SUCCESS) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "CUDA's occupancy calculator refused the input (%s) for compute capability %d.%d, "
        "block %d, %d registers, %d+%d bytes shared memory",
        err == CUDA_OCC_ERROR_UNKNOWN_DEVICE ? "unknown device" : "invalid input",
        in.prop.computeMajor, in.prop.computeMinor, in.block_size, in.attrs.numRegs,
        static_cast<int>(in.attrs.sharedSizeBytes), static_cast<int>(in.dynamic_smem)));
  }
  TheoreticalOccupancy t;
  t.threads_per_block = in.block_size;
  t.warps_per_block = (in.block_size + in.prop.warpSize - 1) / in.prop.warpSize;
  t.blocks_per_sm = r.activeBlocksPerMultiprocessor;
  t.active_warps_per_sm = t.blocks_per_sm * t.warps_per_block;
  t.max_warps_per_sm = in.prop.maxThreadsPerMultiprocessor / in.prop.warpSize;
  t.occupancy = t.max_warps_per_sm > 0
                    ? static_cast<double>(t.active_warps_per_sm) / t.max_warps_per_sm
                    : 0.0;
  t.limiters = r.limitingFactors;
  t.block_limit_registers = r.blockLimitRegs;
  t.block_limit_shared_memory = r.blockLimitSharedMem;
  t.block_limit_warps = r.blockLimitWarps;
  t.block_limit_blocks = r.blockLimitBlocks;
  t.block_limit_barriers = r.blockLimitBarriers;
  t.allocated_registers_per_block = r.allocatedRegistersPerBlock;
  t.allocated_shared_memory_per_block = r.allocatedSharedMemPerBlock;
  t.shared_memory_per_block = in.attrs.sharedSizeBytes + in.dynamic_smem;
  t.grid_blocks = in.grid_blocks;
  const double wave = static_cast<double>(t.blocks_per_sm) * in.sm_count;
  t.waves = wave > 0 ? static_cast<double>(in.grid_blocks) / wave : 0.0;
  return t;
}

// "25%", "37.5%".
std::string Percent(double fraction) {
  const double p = std::round(fraction * 1000.0) / 10.0;
  if (p == std::floor(p)) return absl::StrFormat("%d%%", static_cast<int>(p));
  return absl::StrFormat("%.1f%%", p);
}

// "100 KiB", "48.5 KiB", "512 B".
std::string Bytes(uint64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  if (bytes % 1024 == 0) return absl::StrCat(bytes / 1024, " KiB");
  return absl::StrFormat("%.1f KiB", bytes / 1024.0);
}

std::string Summary(const TheoreticalOccupancy& t) {
  return absl::StrFormat("%d block%s of %d threads (%d warps, %s)", t.blocks_per_sm,
                         t.blocks_per_sm == 1 ? "" : "s", t.threads_per_block,
                         t.active_warps_per_sm, Percent(t.occupancy));
}

std::string Fits(const TheoreticalOccupancy& t) {
  return absl::StrFormat("%d block%s fit (%d warps, %s)", t.blocks_per_sm,
                         t.blocks_per_sm == 1 ? "" : "s", t.active_warps_per_sm,
                         Percent(t.occupancy));
}

void AdviseRegisters(const CalculatorInputs& base, const TheoreticalOccupancy& cur,
                     std::vector<OccupancyAdvice>* out) {
  CalculatorInputs in = base;
  in.attrs.numRegs = 0;
  auto unlimited = Run(in);
  if (!unlimited.ok() || unlimited->blocks_per_sm <= cur.blocks_per_sm) {
    out->push_back({kLimitRegisters,
                    absl::StrFormat("%d registers/thread ties with another limit at %s; lowering "
                                    "registers alone does not raise occupancy",
                                    base.attrs.numRegs, Summary(cur))});
    return;
  }
  int next_regs = 0, full_regs = 0;
  TheoreticalOccupancy next, full;
  for (int regs = base.attrs.numRegs - 1; regs >= 1; --regs) {
    in.attrs.numRegs = regs;
    auto t = Run(in);
    if (!t.ok()) continue;
    if (next_regs == 0 && t->blocks_per_sm > cur.blocks_per_sm) {
      next_regs = regs;
      next = *t;
    }
    if (t->blocks_per_sm >= unlimited->blocks_per_sm) {
      full_regs = regs;
      full = *t;
      break;
    }
  }
  if (next_regs == 0) return;
  std::string text =
      absl::StrFormat("%d registers/thread limits the SM to %s; at <= %d registers %s",
                      base.attrs.numRegs, Summary(cur), next_regs, Fits(next));
  if (full_regs != 0 && full_regs != next_regs) {
    absl::StrAppendFormat(&text, ", at <= %d registers %s", full_regs, Fits(full));
  }
  if (full.occupancy < 1.0 && full_regs != 0) {
    absl::StrAppend(&text, ", then ", LimiterNames(full.limiters & ~kLimitRegisters), " limits it");
  }
  absl::StrAppend(&text,
                  " (cap registers with __launch_bounds__ or -maxrregcount; check for spills)");
  out->push_back({kLimitRegisters, std::move(text)});
}

void AdviseSharedMemory(const CalculatorInputs& base, const TheoreticalOccupancy& cur,
                        std::vector<OccupancyAdvice>* out) {
  const uint64_t smem = base.attrs.sharedSizeBytes + base.dynamic_smem;
  CalculatorInputs in = base;
  in.attrs.sharedSizeBytes = 0;
  std::string reserved =
      base.prop.reservedSharedMemPerBlock > 0
          ? absl::StrCat(" incl. ", Bytes(base.prop.reservedSharedMemPerBlock), " reserved")
          : "";
  std::string text = absl::StrFormat(
      "%s of shared memory per block (%s allocated%s) limits the SM to %s", Bytes(smem),
      Bytes(cur.allocated_shared_memory_per_block), reserved, Summary(cur));
  // Does a larger carve-out alone help?
  if (base.state.carveoutConfig != SHAREDMEM_CARVEOUT_DEFAULT &&
      base.state.carveoutConfig < SHAREDMEM_CARVEOUT_MAX_SHARED) {
    CalculatorInputs c = base;
    c.state.carveoutConfig = SHAREDMEM_CARVEOUT_MAX_SHARED;
    auto t = Run(c);
    if (t.ok() && t->blocks_per_sm > cur.blocks_per_sm) {
      absl::StrAppendFormat(&text,
                            "; the requested carve-out is %d%%: at 100%% "
                            "(cudaFuncAttributePreferredSharedMemoryCarveout) %s",
                            base.state.carveoutConfig, Fits(*t));
      out->push_back({kLimitSharedMemory, std::move(text)});
      return;
    }
  }
  const uint64_t step = 128;
  for (uint64_t s = (smem / step) * step;; s -= step) {
    if (s < smem) {
      in.dynamic_smem = s;
      auto t = Run(in);
      if (t.ok() && t->blocks_per_sm > cur.blocks_per_sm) {
        absl::StrAppendFormat(&text, "; at <= %s per block %s", Bytes(s), Fits(*t));
        out->push_back({kLimitSharedMemory, std::move(text)});
        return;
      }
    }
    if (s < step) break;
  }
  absl::StrAppend(&text, "; another limit ties with it, so less shared memory alone does not help");
  out->push_back({kLimitSharedMemory, std::move(text)});
}

void AdviseBlockSize(const CalculatorInputs& base, const TheoreticalOccupancy& cur,
                     std::vector<OccupancyAdvice>* out) {
  CalculatorInputs in = base;
  const int warp = base.prop.warpSize;
  TheoreticalOccupancy best = cur;
  for (int b = warp; b <= base.prop.maxThreadsPerBlock; b += warp) {
    in.block_size = b;
    auto t = Run(in);
    if (!t.ok()) continue;
    // Prefer more warps, then the block size closest to the current one.
    const bool more = t->active_warps_per_sm > best.active_warps_per_sm;
    const bool closer = t->active_warps_per_sm == best.active_warps_per_sm &&
                        std::abs(b - cur.threads_per_block) <
                            std::abs(best.threads_per_block - cur.threads_per_block);
    if (more || closer) best = *t;
  }
  if (best.active_warps_per_sm <= cur.active_warps_per_sm) return;
  std::string text;
  if (cur.limiters & kLimitBlocks) {
    text = absl::StrFormat(
        "the SM holds at most %d blocks; with %d-thread blocks that is %d warps (%s)",
        cur.block_limit_blocks, cur.threads_per_block, cur.active_warps_per_sm,
        Percent(cur.occupancy));
  } else {
    text = absl::StrFormat("blocks of %d threads: %d fit in the SM's %d warp slots (%d warps, %s)",
                           cur.threads_per_block, cur.blocks_per_sm, cur.max_warps_per_sm,
                           cur.active_warps_per_sm, Percent(cur.occupancy));
  }
  absl::StrAppendFormat(&text,
                        "; blocks of %d threads would give %d warps (%s) with the same registers "
                        "and shared memory per block",
                        best.threads_per_block, best.active_warps_per_sm, Percent(best.occupancy));
  out->push_back({cur.limiters & (kLimitBlocks | kLimitWarps), std::move(text)});
}

}  // namespace
#endif  // WARPSCOPE_HAVE_CUDA_OCCUPANCY

std::string LimiterNames(uint32_t limiters) {
  std::vector<std::string> names;
  if (limiters & kLimitRegisters) names.push_back("registers");
  if (limiters & kLimitSharedMemory) names.push_back("shared memory");
  if (limiters & kLimitWarps) names.push_back("warps");
  if (limiters & kLimitBlocks) names.push_back("blocks");
  if (limiters & kLimitBarriers) names.push_back("barriers");
  if (limiters & kLimitVirtual) names.push_back("virtual resources");
  if (names.empty()) return "none";
  return absl::StrJoin(names, "+");
}

#ifdef WARPSCOPE_HAVE_CUDA_OCCUPANCY
absl::StatusOr<TheoreticalOccupancy> ComputeTheoreticalOccupancy(const DeviceInfo& device,
                                                                 const LaunchConfig& launch) {
  auto in = BuildInputs(device, launch);
  if (!in.ok()) return in.status();
  return Run(*in);
}
#else
absl::StatusOr<TheoreticalOccupancy> ComputeTheoreticalOccupancy(const DeviceInfo&,
                                                                 const LaunchConfig&) {
  return absl::UnimplementedError(
      "needs the CUDA toolkit: this warpscope was built without cuda_occupancy.h "
      "(WARPSCOPE_ANALYZERS_ONLY); build with the toolkit for theoretical occupancy");
}
#endif

ResidentWarpLimit ResidentWarpLimitOf(const DeviceInfo* device, const LaunchConfig* launch) {
  ResidentWarpLimit limit;
  if (device == nullptr || !DeviceLimitsProblem(*device).empty()) return limit;
  const double sms = device->sm_count;
  if (launch != nullptr) {
    absl::StatusOr<TheoreticalOccupancy> t = ComputeTheoreticalOccupancy(*device, *launch);
    if (t.ok() && t->blocks_per_sm > 0) {
      limit.per_sm = t->active_warps_per_sm;
      const double blocks =
          std::min(static_cast<double>(t->grid_blocks), t->blocks_per_sm * sms);
      limit.gpu = blocks * t->warps_per_block;
      limit.theoretical = true;
      return limit;
    }
  }
  limit.per_sm = device->max_warps_per_sm;
  limit.gpu = sms * device->max_warps_per_sm;
  return limit;
}

#ifndef WARPSCOPE_HAVE_CUDA_OCCUPANCY
std::vector<OccupancyAdvice> AdviseOccupancy(const DeviceInfo&, const LaunchConfig&,
                                             const TheoreticalOccupancy&) {
  return {};  // no theoretical occupancy to advise from
}
#else
std::vector<OccupancyAdvice> AdviseOccupancy(const DeviceInfo& device, const LaunchConfig& launch,
                                             const TheoreticalOccupancy& current) {
  std::vector<OccupancyAdvice> advice;
  auto in = BuildInputs(device, launch);
  if (!in.ok()) return advice;
  if (current.blocks_per_sm == 0) {
    advice.push_back(
        {current.limiters, absl::StrFormat("the calculator finds that no block of this launch fits "
                                           "on an SM (limited by %s): check the trace's device "
                                           "limits and launch configuration",
                                           LimiterNames(current.limiters))});
    return advice;
  }
  if (current.occupancy < 1.0) {
    if (current.limiters & kLimitRegisters) AdviseRegisters(*in, current, &advice);
    if (current.limiters & kLimitSharedMemory) AdviseSharedMemory(*in, current, &advice);
    if (current.limiters & (kLimitWarps | kLimitBlocks)) AdviseBlockSize(*in, current, &advice);
  }
  if (current.grid_blocks > 0 && current.waves < 1.0) {
    advice.push_back(
        {0, absl::StrFormat("the grid (%d blocks) fills %s of one wave (%d blocks/SM x %d SMs): "
                            "achieved occupancy stays below the theoretical one",
                            current.grid_blocks, Percent(current.waves), current.blocks_per_sm,
                            in->sm_count)});
  }
  return advice;
}
#endif  // WARPSCOPE_HAVE_CUDA_OCCUPANCY

}  // namespace warpscope
