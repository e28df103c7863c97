// Plain C++ records that collectors hand to the TraceWriter. They mirror the messages of
// proto/warpscope/v1/trace.proto field for field, but carry absolute timestamps (ns, in the
// trace's clock domain) and strings by interned id. No CUPTI or protobuf types here.
#ifndef WARPSCOPE_PROTO_WRITER_TRACE_RECORDS_H_
#define WARPSCOPE_PROTO_WRITER_TRACE_RECORDS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "warpscope/v1/trace_fields.h"

namespace warpscope {

// The format version the writer puts in Header.format_major/minor. Readers refuse a file whose
// major is greater than the kFormatMajor they were built with and accept any minor.
inline constexpr uint32_t kFormatMajor = 1;
inline constexpr uint32_t kFormatMinor = 0;

// The schema's enums, with values from the header generated from trace.proto (a test checks
// that every value the schema has is here).
enum class ClockDomain : uint32_t {
  kUnspecified = fields::ClockDomain::kUnspecified,
  kRealtime = fields::ClockDomain::kRealtime,
  kMonotonic = fields::ClockDomain::kMonotonic,
  kMonotonicRaw = fields::ClockDomain::kMonotonicRaw,
  kSynthetic = fields::ClockDomain::kSynthetic,
};
enum class MemoryKind : uint32_t {
  kUnknown = fields::MemoryKind::kUnknown,
  kPageable = fields::MemoryKind::kPageable,
  kPinned = fields::MemoryKind::kPinned,
  kDevice = fields::MemoryKind::kDevice,
  kArray = fields::MemoryKind::kArray,
  kManaged = fields::MemoryKind::kManaged,
  kDeviceStatic = fields::MemoryKind::kDeviceStatic,
  kManagedStatic = fields::MemoryKind::kManagedStatic,
};
enum class CopyKind : uint32_t {
  kUnknown = fields::CopyKind::kUnknown,
  kHtoD = fields::CopyKind::kHtod,
  kDtoH = fields::CopyKind::kDtoh,
  kHtoA = fields::CopyKind::kHtoa,
  kAtoH = fields::CopyKind::kAtoh,
  kAtoA = fields::CopyKind::kAtoa,
  kAtoD = fields::CopyKind::kAtod,
  kDtoA = fields::CopyKind::kDtoa,
  kDtoD = fields::CopyKind::kDtod,
  kHtoH = fields::CopyKind::kHtoh,
  kPtoP = fields::CopyKind::kPtop,
};
enum class SyncKind : uint32_t {
  kUnknown = fields::SyncKind::kUnknown,
  kEvent = fields::SyncKind::kEvent,
  kStreamWaitEvent = fields::SyncKind::kStreamWaitEvent,
  kStream = fields::SyncKind::kStream,
  kContext = fields::SyncKind::kContext,
};
enum class ApiDomain : uint32_t {
  kUnknown = fields::ApiDomain::kUnknown,
  kRuntime = fields::ApiDomain::kRuntime,
  kDriver = fields::ApiDomain::kDriver,
};
enum class CaptureTrigger : uint32_t {
  kUnknown = fields::CaptureTrigger::kUnknown,
  kProcess = fields::CaptureTrigger::kProcess,
  kDelay = fields::CaptureTrigger::kDelay,
  kDuration = fields::CaptureTrigger::kDuration,
  kProfilerApi = fields::CaptureTrigger::kProfilerApi,
  kNvtx = fields::CaptureTrigger::kNvtx,
  kSignal = fields::CaptureTrigger::kSignal,
  kError = fields::CaptureTrigger::kError,
};
enum class Severity : uint32_t {
  kInfo = fields::Severity::kInfo,
  kDataLoss = fields::Severity::kDataLoss,
  kError = fields::Severity::kError,
};
enum class EndReason : uint32_t {
  kUnknown = fields::EndReason::kUnknown,
  kExit = fields::EndReason::kExit,
  kSignal = fields::EndReason::kSignal,
  kWriteError = fields::EndReason::kWriteError,
  kDetach = fields::EndReason::kDetach,
};

using KeyValueList = std::vector<std::pair<std::string, std::string>>;

struct HeaderRecord {
  std::string tool_version;
  uint32_t pid = 0;
  uint32_t ppid = 0;
  std::string hostname;
  std::vector<std::string> command_line;
  KeyValueList rank_env;
  ClockDomain clock_domain = ClockDomain::kUnspecified;
  uint64_t time_base_ns = 0;       // Absolute time of event time 0; the writer subtracts it.
  uint64_t unix_time_base_ns = 0;
  KeyValueList config;
  std::string producer;
  uint32_t cupti_version = 0;
  uint32_t cuda_driver_version = 0;
};

struct DeviceRecord {
  uint32_t id = 0;
  std::string name;
  uint32_t compute_capability_major = 0;
  uint32_t compute_capability_minor = 0;
  uint32_t sm_count = 0;
  uint32_t max_warps_per_sm = 0;
  uint32_t max_blocks_per_sm = 0;
  uint32_t max_threads_per_block = 0;
  uint32_t max_registers_per_sm = 0;
  uint32_t max_registers_per_block = 0;
  uint64_t max_shared_memory_per_sm = 0;
  uint64_t max_shared_memory_per_block = 0;
  uint64_t max_shared_memory_per_block_optin = 0;
  uint64_t reserved_shared_memory_per_block = 0;
  uint32_t threads_per_warp = 0;
  uint64_t core_clock_khz = 0;
  uint64_t global_memory_bytes = 0;
  uint64_t global_memory_bandwidth_kbps = 0;
  uint64_t l2_cache_bytes = 0;
  std::string uuid;
  uint32_t pci_bus_id = 0;
  uint32_t register_allocation_unit = 0;
  uint32_t shared_memory_allocation_unit = 0;
};

struct ContextRecord {
  uint32_t id = 0;
  uint32_t device_id = 0;
  bool is_green = false;
  uint32_t sm_count = 0;
};

// Interned by the writer (TraceWriter::InternLaunchConfig); equal configs share one id.
struct LaunchConfigRecord {
  uint32_t grid_x = 0, grid_y = 0, grid_z = 0;
  uint32_t block_x = 0, block_y = 0, block_z = 0;
  uint32_t cluster_x = 0, cluster_y = 0, cluster_z = 0;
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_memory = 0;
  uint32_t dynamic_shared_memory = 0;
  uint32_t local_memory_per_thread = 0;
  uint32_t shared_memory_executed = 0;
  uint32_t shared_memory_config = 0;
  uint32_t shared_memory_carveout_requested = 0;
  uint32_t shmem_limit_config = 0;
  friend bool operator==(const LaunchConfigRecord&, const LaunchConfigRecord&) = default;
};

struct KernelRecord {
  uint64_t name_id = 0;
  uint64_t mangled_name_id = 0;
  uint64_t launch_config_id = 0;
  uint64_t start_ns = 0;  // absolute
  uint64_t end_ns = 0;    // absolute
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint32_t graph_id = 0;
  uint32_t graph_node_id = 0;
  uint64_t grid_id = 0;
};

struct MemcpyRecord {
  CopyKind copy_kind = CopyKind::kUnknown;
  MemoryKind src_kind = MemoryKind::kUnknown;
  MemoryKind dst_kind = MemoryKind::kUnknown;
  uint64_t bytes = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  bool is_async = false;
  uint32_t src_device_id = 0;
  uint32_t dst_device_id = 0;
  uint32_t graph_node_id = 0;
};

struct MemsetRecord {
  uint32_t value = 0;
  uint64_t bytes = 0;
  MemoryKind memory_kind = MemoryKind::kUnknown;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  bool is_async = false;
};

struct SyncRecord {
  SyncKind kind = SyncKind::kUnknown;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t cuda_event_id = 0;
  uint32_t correlation_id = 0;
  uint64_t thread_id = 0;  // TraceWriter::InternThread id
};

struct ApiCallRecord {
  ApiDomain domain = ApiDomain::kUnknown;
  uint64_t name_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t thread_id = 0;  // TraceWriter::InternThread id
  uint32_t correlation_id = 0;
  uint32_t result = 0;
  uint32_t callback_id = 0;
};

struct GraphLaunchRecord {
  uint32_t graph_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
};

struct OverheadRecord {
  uint64_t kind_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t thread_id = 0;
};

struct NvtxRangeRecord {
  uint64_t name_id = 0;
  uint64_t domain_id = 0;
  uint32_t category = 0;
  uint32_t color = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t thread_id = 0;
  uint64_t end_thread_id = 0;
  bool is_push_pop = false;
  uint32_t depth = 0;
};

struct NvtxMarkRecord {
  uint64_t name_id = 0;
  uint64_t domain_id = 0;
  uint32_t category = 0;
  uint32_t color = 0;
  uint64_t timestamp_ns = 0;
  uint64_t thread_id = 0;
};

struct PmMetricSetRecord {
  uint32_t id = 0;
  uint32_t device_id = 0;
  std::vector<std::string> metric_names;
  uint64_t interval_ns = 0;
  // Only when samples are written raw (PmCounterDataRecord): what evaluating them needs.
  std::string chip_name;
  std::string counter_availability;  // bytes
};

// Raw PM samples: a counter data image and the samples of it that are usable, with their
// times (absolute, trace clock). The analyzers evaluate the values.
struct PmCounterDataRecord {
  uint32_t metric_set_id = 0;
  std::span<const uint8_t> image;
  std::vector<uint32_t> sample_index;
  std::vector<uint64_t> start_ns;
  std::vector<uint64_t> end_ns;
};

struct PmSampleRecord {
  uint32_t metric_set_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::vector<double> values;  // Collectors reuse one vector; the writer copies nothing.
};

struct PcStallReasonsRecord {
  uint32_t device_id = 0;
  std::vector<uint32_t> index;
  std::vector<std::string> name;
};

struct PcSampleRecord {
  uint64_t cubin_crc = 0;
  uint64_t function_name_id = 0;
  uint64_t pc_offset = 0;
  std::vector<uint32_t> stall_reason_index;
  std::vector<uint64_t> samples;
  uint32_t correlation_id = 0;
};

struct PcSampleBatchRecord {
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint64_t timestamp_ns = 0;
  uint64_t total_samples = 0;
  uint64_t dropped_samples = 0;
  uint64_t non_user_kernel_samples = 0;
  bool hardware_buffer_full = false;
  std::vector<PcSampleRecord> records;  // The writer splits large batches across packets.
};

// A module's binary as CUPTI handed it over at module load. `image` points into CUPTI's
// buffer, valid only during the callback: the writer copies it while encoding.
struct CubinImageRecord {
  uint64_t crc = 0;  // cuptiGetCubinCrc
  uint32_t device_id = 0;
  const void* image = nullptr;
  size_t size = 0;
};

struct CaptureWindowEdgeRecord {
  uint32_t window_id = 0;
  bool begin = false;
  uint64_t timestamp_ns = 0;
  CaptureTrigger trigger = CaptureTrigger::kUnknown;
};

}  // namespace warpscope

#endif  // WARPSCOPE_PROTO_WRITER_TRACE_RECORDS_H_
