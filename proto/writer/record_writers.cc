// The records whose packets need more than the generated Batch::Write
// (warpscope/v1/trace_record_writers.cc, from trace.proto): PmCounterData, whose many sample
// times are made relative into scratch vectors; PcSampleBatch and CubinImage records larger
// than a chunk, split over several packets; and notices, which are not records.
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "proto/writer/writer_impl.h"
#include "warpscope/v1/trace_encoders.h"
#include "warpscope/v1/trace_fields.h"

namespace warpscope {

using wire::SizeSink;
using writer_internal::EncodePcSampleRecord;
using writer_internal::MaxBodyIn;
using writer_internal::Packet;
using writer_internal::PacketSize;

namespace {

// Bytes of one PcSampleBatch.records field holding `r`.
size_t PcSampleRecordFieldSize(const PcSampleRecord& r) {
  SizeSink s;
  wire::Nested(s, fields::PcSampleBatch::kRecords, [&](auto& m) { EncodePcSampleRecord(m, r); });
  return s.size();
}

}  // namespace

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

bool TraceWriter::Batch::WriteNotice(Severity severity, std::string_view source,
                                     std::string_view message, uint64_t timestamp_ns) {
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  const uint64_t timestamp = w.RelTime(timestamp_ns);
  return w.EmitSized(Packet::kNotice, [&](auto& s) {
    writer_internal::EncodeNotice(s, timestamp, severity, source, message);
  });
}

}  // namespace warpscope
