// Range checks on device limits, launch configurations and PM samples (see trace_limits.h).
#include "analyzers/model/trace_limits.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace warpscope {
namespace {

// Appends "FIELD VALUE is out of range (at most BOUND)" when value > bound; keeps the first.
void Check(std::string* problem, std::string_view field, uint64_t value, uint64_t bound) {
  if (!problem->empty() || value <= bound) return;
  *problem = absl::StrCat(std::string(field), " ", value, " is out of range (at most ", bound, ")");
}

}  // namespace

std::string DeviceLimitsProblem(const DeviceInfo& d) {
  std::string p;
  Check(&p, "compute_capability_major", d.compute_capability_major, kMaxComputeCapability);
  Check(&p, "compute_capability_minor", d.compute_capability_minor, kMaxComputeCapability);
  Check(&p, "sm_count", d.sm_count, kMaxSmCount);
  Check(&p, "threads_per_warp", d.threads_per_warp, kMaxThreadsPerWarp);
  Check(&p, "max_warps_per_sm", d.max_warps_per_sm, kMaxWarpsPerSm);
  Check(&p, "max_threads_per_block", d.max_threads_per_block, kMaxThreadsPerBlock);
  Check(&p, "max_registers_per_sm", d.max_registers_per_sm, kMaxRegisters);
  Check(&p, "max_registers_per_block", d.max_registers_per_block, kMaxRegisters);
  Check(&p, "max_shared_memory_per_sm", d.max_shared_memory_per_sm, kMaxSharedMemoryBytes);
  Check(&p, "max_shared_memory_per_block", d.max_shared_memory_per_block, kMaxSharedMemoryBytes);
  Check(&p, "max_shared_memory_per_block_optin", d.max_shared_memory_per_block_optin,
        kMaxSharedMemoryBytes);
  Check(&p, "reserved_shared_memory_per_block", d.reserved_shared_memory_per_block,
        kMaxSharedMemoryBytes);
  return p;
}

std::string LaunchConfigProblem(const LaunchConfig& l) {
  std::string p;
  Check(&p, "grid_x", l.grid_x, kMaxGridX);
  Check(&p, "grid_y", l.grid_y, kMaxGridYZ);
  Check(&p, "grid_z", l.grid_z, kMaxGridYZ);
  Check(&p, "block_x", l.block_x, kMaxThreadsPerBlock);
  Check(&p, "block_y", l.block_y, kMaxThreadsPerBlock);
  Check(&p, "block_z", l.block_z, kMaxThreadsPerBlock);
  // Each dimension fits, so the product cannot overflow 64 bits. 0 in y or z counts as 1,
  // as the occupancy calculation reads it.
  const uint64_t threads = uint64_t{l.block_x} * std::max(1u, l.block_y) * std::max(1u, l.block_z);
  Check(&p, "threads per block (block_x * block_y * block_z)", threads, kMaxThreadsPerBlock);
  Check(&p, "registers_per_thread", l.registers_per_thread, kMaxRegistersPerThread);
  Check(&p, "static_shared_memory", l.static_shared_memory, kMaxSharedMemoryBytes);
  Check(&p, "dynamic_shared_memory", l.dynamic_shared_memory, kMaxSharedMemoryBytes);
  return p;
}

std::string PmSampleProblem(const PmSample& s) {
  if (EndOverflows(s.start_ns, s.duration_ns)) {
    return absl::StrCat("start_ns ", s.start_ns, " + duration_ns ", s.duration_ns,
                        " overflows 64 bits");
  }
  for (size_t i = 0; i < s.values.size(); ++i) {
    if (!std::isfinite(s.values[i])) return absl::StrCat("value ", i, " is not a finite number");
  }
  return "";
}

}  // namespace warpscope
