// Message bodies that more than one file encodes (Header at Open, EndOfTrace at Close and
// after a full disk, PcSampleRecord when a batch is measured and split). Field numbers come
// from warpscope/v1/trace_fields.h, generated from proto/warpscope/v1/trace.proto at build time.
#ifndef WARPSCOPE_PROTO_WRITER_RECORD_ENCODERS_H_
#define WARPSCOPE_PROTO_WRITER_RECORD_ENCODERS_H_

#include <span>
#include <string>

#include "proto/writer/trace_records.h"
#include "proto/writer/wire_format.h"
#include "warpscope/v1/trace_fields.h"

namespace warpscope::writer_internal {

template <typename Sink>
void EncodeKeyValues(Sink& s, uint32_t field, const KeyValueList& list) {
  using F = fields::KeyValue;
  // Not a structured binding: clang before 16 cannot capture those in the lambda.
  for (const auto& entry : list) {
    wire::Nested(s, field, [&](auto& m) {
      m.String(F::kKey, entry.first);
      m.String(F::kValue, entry.second);
    });
  }
}

template <typename Sink>
void EncodeHeader(Sink& s, const HeaderRecord& h) {
  using F = fields::Header;
  s.Uint(F::kFormatMajor, kFormatMajor);
  s.Uint(F::kFormatMinor, kFormatMinor);
  s.String(F::kToolVersion, h.tool_version);
  s.Uint(F::kPid, h.pid);
  s.Uint(F::kPpid, h.ppid);
  s.String(F::kHostname, h.hostname);
  for (const std::string& arg : h.command_line) s.RepeatedString(F::kCommandLine, arg);
  EncodeKeyValues(s, F::kRankEnv, h.rank_env);
  s.EnumValue(F::kClockDomain, h.clock_domain);
  s.Uint(F::kTimeBaseNs, h.time_base_ns);
  s.Uint(F::kUnixTimeBaseNs, h.unix_time_base_ns);
  EncodeKeyValues(s, F::kConfig, h.config);
  s.String(F::kProducer, h.producer);
  s.Uint(F::kCuptiVersion, h.cupti_version);
  s.Uint(F::kCudaDriverVersion, h.cuda_driver_version);
}

template <typename Sink>
void EncodeDevice(Sink& s, const DeviceRecord& d) {
  using F = fields::Device;
  s.Uint(F::kId, d.id);
  s.String(F::kName, d.name);
  s.Uint(F::kComputeCapabilityMajor, d.compute_capability_major);
  s.Uint(F::kComputeCapabilityMinor, d.compute_capability_minor);
  s.Uint(F::kSmCount, d.sm_count);
  s.Uint(F::kMaxWarpsPerSm, d.max_warps_per_sm);
  s.Uint(F::kMaxBlocksPerSm, d.max_blocks_per_sm);
  s.Uint(F::kMaxThreadsPerBlock, d.max_threads_per_block);
  s.Uint(F::kMaxRegistersPerSm, d.max_registers_per_sm);
  s.Uint(F::kMaxRegistersPerBlock, d.max_registers_per_block);
  s.Uint(F::kMaxSharedMemoryPerSm, d.max_shared_memory_per_sm);
  s.Uint(F::kMaxSharedMemoryPerBlock, d.max_shared_memory_per_block);
  s.Uint(F::kMaxSharedMemoryPerBlockOptin, d.max_shared_memory_per_block_optin);
  s.Uint(F::kReservedSharedMemoryPerBlock, d.reserved_shared_memory_per_block);
  s.Uint(F::kThreadsPerWarp, d.threads_per_warp);
  s.Uint(F::kCoreClockKhz, d.core_clock_khz);
  s.Uint(F::kGlobalMemoryBytes, d.global_memory_bytes);
  s.Uint(F::kGlobalMemoryBandwidthKbps, d.global_memory_bandwidth_kbps);
  s.Uint(F::kL2CacheBytes, d.l2_cache_bytes);
  s.String(F::kUuid, d.uuid);
  s.Uint(F::kPciBusId, d.pci_bus_id);
  s.Uint(F::kRegisterAllocationUnit, d.register_allocation_unit);
  s.Uint(F::kSharedMemoryAllocationUnit, d.shared_memory_allocation_unit);
}

template <typename Sink>
void EncodePcSampleRecord(Sink& s, const PcSampleRecord& r) {
  using F = fields::PcSampleRecord;
  s.Uint(F::kCubinCrc, r.cubin_crc);
  s.Uint(F::kFunctionNameId, r.function_name_id);
  s.Uint(F::kPcOffset, r.pc_offset);
  s.PackedVarint(F::kStallReasonIndex, std::span<const uint32_t>(r.stall_reason_index));
  s.PackedVarint(F::kSamples, std::span<const uint64_t>(r.samples));
  s.Uint(F::kCorrelationId, r.correlation_id);
}

template <typename Sink>
void EncodeEndOfTrace(Sink& s, uint64_t timestamp_rel, EndReason reason) {
  using F = fields::EndOfTrace;
  s.Uint(F::kTimestampNs, timestamp_rel);
  s.EnumValue(F::kReason, reason);
}

// Bytes of one PcSampleBatch.records field holding `r`.
inline size_t PcSampleRecordFieldSize(const PcSampleRecord& r) {
  wire::SizeSink s;
  wire::Nested(s, fields::PcSampleBatch::kRecords, [&](auto& m) { EncodePcSampleRecord(m, r); });
  return s.size();
}

}  // namespace warpscope::writer_internal

#endif  // WARPSCOPE_PROTO_WRITER_RECORD_ENCODERS_H_
