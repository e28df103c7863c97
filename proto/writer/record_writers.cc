// Records into packets: each Batch::Write turns one plain record into its TracePacket body
// (timestamps made relative to Header.time_base_ns) and emits it into the chunk pool.
// Fixed-shape messages go through EmitSmall, the others through EmitSized; PcSampleBatch and
// CubinImage records larger than a chunk are split over several packets.
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "proto/writer/record_encoders.h"
#include "proto/writer/writer_impl.h"
#include "warpscope/v1/trace_fields.h"

namespace warpscope {

using wire::BufferSink;
using wire::SizeSink;
using writer_internal::EncodeDevice;
using writer_internal::EncodePcSampleRecord;
using writer_internal::MaxBodyIn;
using writer_internal::Packet;
using writer_internal::PacketSize;
using writer_internal::PcSampleRecordFieldSize;

bool TraceWriter::Batch::Write(const DeviceRecord& r) {
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  return w.EmitSized(Packet::kDevice, [&](auto& s) { EncodeDevice(s, r); });
}

bool TraceWriter::Batch::Write(const ContextRecord& r) {
  using F = fields::ContextInfo;
  if (!locked_) return false;
  return writer_.impl_->EmitSmall(Packet::kContext, [&](BufferSink& s) {
    s.Uint(F::kId, r.id);
    s.Uint(F::kDeviceId, r.device_id);
    s.Bool(F::kIsGreen, r.is_green);
    s.Uint(F::kSmCount, r.sm_count);
  });
}

bool TraceWriter::Batch::Write(const KernelRecord& r) {
  using F = fields::KernelEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kKernel, [&](BufferSink& s) {
    s.Uint(F::kNameId, r.name_id);
    s.Uint(F::kMangledNameId, r.mangled_name_id);
    s.Uint(F::kLaunchConfigId, r.launch_config_id);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kDeviceId, r.device_id);
    s.Uint(F::kContextId, r.context_id);
    s.Uint(F::kStreamId, r.stream_id);
    s.Uint(F::kCorrelationId, r.correlation_id);
    s.Uint(F::kGraphId, r.graph_id);
    s.Uint(F::kGraphNodeId, r.graph_node_id);
    s.Uint(F::kGridId, r.grid_id);
  });
}

bool TraceWriter::Batch::Write(const MemcpyRecord& r) {
  using F = fields::MemcpyEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kMemcpy, [&](BufferSink& s) {
    s.EnumValue(F::kCopyKind, r.copy_kind);
    s.EnumValue(F::kSrcKind, r.src_kind);
    s.EnumValue(F::kDstKind, r.dst_kind);
    s.Uint(F::kBytes, r.bytes);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kDeviceId, r.device_id);
    s.Uint(F::kContextId, r.context_id);
    s.Uint(F::kStreamId, r.stream_id);
    s.Uint(F::kCorrelationId, r.correlation_id);
    s.Bool(F::kIsAsync, r.is_async);
    s.Uint(F::kSrcDeviceId, r.src_device_id);
    s.Uint(F::kDstDeviceId, r.dst_device_id);
    s.Uint(F::kGraphNodeId, r.graph_node_id);
  });
}

bool TraceWriter::Batch::Write(const MemsetRecord& r) {
  using F = fields::MemsetEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kMemset, [&](BufferSink& s) {
    s.Uint(F::kValue, r.value);
    s.Uint(F::kBytes, r.bytes);
    s.EnumValue(F::kMemoryKind, r.memory_kind);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kDeviceId, r.device_id);
    s.Uint(F::kContextId, r.context_id);
    s.Uint(F::kStreamId, r.stream_id);
    s.Uint(F::kCorrelationId, r.correlation_id);
    s.Bool(F::kIsAsync, r.is_async);
  });
}

bool TraceWriter::Batch::Write(const SyncRecord& r) {
  using F = fields::SyncEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kSynchronization, [&](BufferSink& s) {
    s.EnumValue(F::kKind, r.kind);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kContextId, r.context_id);
    s.Uint(F::kStreamId, r.stream_id);
    s.Uint(F::kCudaEventId, r.cuda_event_id);
    s.Uint(F::kCorrelationId, r.correlation_id);
    s.Uint(F::kThreadId, r.thread_id);
  });
}

bool TraceWriter::Batch::Write(const ApiCallRecord& r) {
  using F = fields::ApiCallEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kApiCall, [&](BufferSink& s) {
    s.EnumValue(F::kDomain, r.domain);
    s.Uint(F::kNameId, r.name_id);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kThreadId, r.thread_id);
    s.Uint(F::kCorrelationId, r.correlation_id);
    s.Uint(F::kResult, r.result);
    s.Uint(F::kCallbackId, r.callback_id);
  });
}

bool TraceWriter::Batch::Write(const GraphLaunchRecord& r) {
  using F = fields::GraphLaunchEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kGraphLaunch, [&](BufferSink& s) {
    s.Uint(F::kGraphId, r.graph_id);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kDeviceId, r.device_id);
    s.Uint(F::kContextId, r.context_id);
    s.Uint(F::kStreamId, r.stream_id);
    s.Uint(F::kCorrelationId, r.correlation_id);
  });
}

bool TraceWriter::Batch::Write(const OverheadRecord& r) {
  using F = fields::OverheadEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kOverhead, [&](BufferSink& s) {
    s.Uint(F::kKindId, r.kind_id);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kThreadId, r.thread_id);
  });
}

bool TraceWriter::Batch::Write(const NvtxRangeRecord& r) {
  using F = fields::NvtxRangeEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kNvtxRange, [&](BufferSink& s) {
    s.Uint(F::kNameId, r.name_id);
    s.Uint(F::kDomainId, r.domain_id);
    s.Uint(F::kCategory, r.category);
    s.Uint(F::kColor, r.color);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kThreadId, r.thread_id);
    s.Uint(F::kEndThreadId, r.end_thread_id);
    s.Bool(F::kIsPushPop, r.is_push_pop);
    s.Uint(F::kDepth, r.depth);
  });
}

bool TraceWriter::Batch::Write(const NvtxMarkRecord& r) {
  using F = fields::NvtxMarkEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t timestamp = w.RelTime(r.timestamp_ns);
  return w.EmitSmall(Packet::kNvtxMark, [&](BufferSink& s) {
    s.Uint(F::kNameId, r.name_id);
    s.Uint(F::kDomainId, r.domain_id);
    s.Uint(F::kCategory, r.category);
    s.Uint(F::kColor, r.color);
    s.Uint(F::kTimestampNs, timestamp);
    s.Uint(F::kThreadId, r.thread_id);
  });
}

bool TraceWriter::Batch::Write(const PmMetricSetRecord& r) {
  using F = fields::PmMetricSet;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  return w.EmitSized(Packet::kPmMetricSet, [&](auto& s) {
    s.Uint(F::kId, r.id);
    s.Uint(F::kDeviceId, r.device_id);
    for (const std::string& name : r.metric_names) s.RepeatedString(F::kMetricNames, name);
    s.Uint(F::kIntervalNs, r.interval_ns);
    s.String(F::kChipName, r.chip_name);
    s.Bytes(F::kCounterAvailability,
            std::span<const uint8_t>(
                reinterpret_cast<const uint8_t*>(r.counter_availability.data()),
                r.counter_availability.size()));
  });
}

bool TraceWriter::Batch::Write(const PmCounterDataRecord& r) {
  using F = fields::PmCounterData;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  const size_t n = std::min({r.sample_index.size(), r.start_ns.size(), r.end_ns.size()});
  std::vector<uint64_t>& starts = w.scratch_starts;
  std::vector<uint64_t>& durations = w.scratch_durations;
  starts.resize(n);
  durations.resize(n);
  for (size_t i = 0; i < n; ++i) {
    starts[i] = w.RelTime(r.start_ns[i]);
    durations[i] = w.Duration(r.start_ns[i], r.end_ns[i]);
  }
  return w.EmitSized(Packet::kPmCounterData, [&](auto& s) {
    s.Uint(F::kMetricSetId, r.metric_set_id);
    s.Bytes(F::kImage, r.image);
    s.PackedVarint(F::kSampleIndex, std::span<const uint32_t>(r.sample_index.data(), n));
    s.PackedVarint(F::kStartNs, std::span<const uint64_t>(starts));
    s.PackedVarint(F::kDurationNs, std::span<const uint64_t>(durations));
  });
}

bool TraceWriter::Batch::Write(const PmSampleRecord& r) {
  using F = fields::PmSample;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSized(Packet::kPmSample, [&](auto& s) {
    s.Uint(F::kMetricSetId, r.metric_set_id);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.PackedDouble(F::kValues, std::span<const double>(r.values));
  });
}

bool TraceWriter::Batch::Write(const PcStallReasonsRecord& r) {
  using F = fields::PcStallReasons;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  return w.EmitSized(Packet::kPcStallReasons, [&](auto& s) {
    s.Uint(F::kDeviceId, r.device_id);
    s.PackedVarint(F::kIndex, std::span<const uint32_t>(r.index));
    for (const std::string& name : r.name) s.RepeatedString(F::kName, name);
  });
}

bool TraceWriter::Batch::Write(const PcSampleBatchRecord& r) {
  using F = fields::PcSampleBatch;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  const uint64_t timestamp = w.RelTime(r.timestamp_ns);
  auto encode_head = [&](auto& s, bool first) {
    s.Uint(F::kDeviceId, r.device_id);
    s.Uint(F::kContextId, r.context_id);
    s.Uint(F::kTimestampNs, timestamp);
    if (first) {
      s.Uint(F::kTotalSamples, r.total_samples);
      s.Uint(F::kDroppedSamples, r.dropped_samples);
      s.Uint(F::kNonUserKernelSamples, r.non_user_kernel_samples);
      s.Bool(F::kHardwareBufferFull, r.hardware_buffer_full);
    } else {
      s.Bool(F::kContinuation, true);
    }
  };
  auto encode_part = [&](bool first, size_t begin, size_t end) {
    return w.EmitSized(Packet::kPcSamples, [&](auto& s) {
      encode_head(s, first);
      for (size_t i = begin; i < end; ++i) {
        wire::Nested(s, F::kRecords, [&](auto& m) { EncodePcSampleRecord(m, r.records[i]); });
      }
    });
  };

  SizeSink whole;
  encode_head(whole, true);
  for (const PcSampleRecord& rec : r.records) whole.AddPayload(PcSampleRecordFieldSize(rec));
  if (PacketSize(Packet::kPcSamples, whole.size()) <= w.chunk_bytes) {
    return encode_part(true, 0, r.records.size());
  }

  // Too big for one chunk: as many records per packet as fit, in order.
  w.pc_batches_split.Add(1);
  const size_t max_body = MaxBodyIn(Packet::kPcSamples, w.chunk_bytes);
  bool all_written = true;
  bool first = true;
  size_t i = 0;
  const size_t n = r.records.size();
  while (i < n || first) {
    SizeSink head;
    encode_head(head, first);
    size_t body = head.size();
    size_t j = i;
    while (j < n) {
      const size_t record_size = PcSampleRecordFieldSize(r.records[j]);
      if (body + record_size > max_body) break;
      body += record_size;
      ++j;
    }
    if (j == i && i < n) {  // This record alone does not fit in a chunk.
      w.dropped_too_large.Add(1);
      all_written = false;
      ++i;
      continue;
    }
    all_written &= encode_part(first, i, j);
    first = false;
    i = j;
  }
  return all_written;
}

bool TraceWriter::Batch::Write(const CubinImageRecord& r) {
  using F = fields::CubinImage;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  const auto* image = static_cast<const uint8_t*>(r.image);
  auto encode_part = [&](auto& s, size_t offset, size_t size) {
    s.Uint(F::kCrc, r.crc);
    s.Uint(F::kDeviceId, r.device_id);
    s.Bytes(F::kImage, image + offset, size);
    s.Uint(F::kOffset, offset);
    s.Uint(F::kTotalBytes, r.size);
  };
  // Parts as large as a chunk takes: the head (crc, device, offset, total) is at most 44
  // bytes and the image's length prefix 1 + 5.
  const size_t max_body = MaxBodyIn(Packet::kCubin, w.chunk_bytes);
  const size_t max_part = max_body > 64 ? max_body - 64 : 0;
  if (max_part == 0) return false;
  bool all_written = true;
  size_t offset = 0;
  do {
    const size_t part = std::min(max_part, r.size - offset);
    all_written &= w.EmitSized(Packet::kCubin, [&](auto& s) { encode_part(s, offset, part); });
    offset += part;
  } while (offset < r.size && all_written);
  return all_written;
}

bool TraceWriter::Batch::Write(const CaptureWindowEdgeRecord& r) {
  using F = fields::CaptureWindowEdge;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t timestamp = w.RelTime(r.timestamp_ns);
  return w.EmitSmall(Packet::kCaptureWindow, [&](BufferSink& s) {
    s.Uint(F::kWindowId, r.window_id);
    s.Bool(F::kBegin, r.begin);
    s.Uint(F::kTimestampNs, timestamp);
    s.EnumValue(F::kTrigger, r.trigger);
  });
}

bool TraceWriter::Batch::WriteNotice(Severity severity, std::string_view source,
                                     std::string_view message, uint64_t timestamp_ns) {
  using F = fields::Notice;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  const uint64_t timestamp = w.RelTime(timestamp_ns);
  return w.EmitSized(Packet::kNotice, [&](auto& s) {
    s.Uint(F::kTimestampNs, timestamp);
    s.EnumValue(F::kSeverity, severity);
    s.String(F::kSource, source);
    s.String(F::kMessage, message);
  });
}

}  // namespace warpscope
