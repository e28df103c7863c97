// TraceColumns' small tables (trace_columns_internal.h): devices, contexts, PM and PC samples,
// capture windows (by the rules TraceModel applies: trace_model_samples.h), stats and the
// import counters.
#include "analyzers/model/trace_columns_internal.h"

namespace warpscope::columns_internal {

SampleDecoder::SampleDecoder(TraceReader& reader, TraceColumns& out)
    : reader_(reader),
      out_(out),
      rules_({out.samples.devices, out.samples.contexts, out.samples.pm_metric_sets,
              out.samples.pm_samples, out.samples.pc_stall_reasons, out.samples.pc_sample_batches,
              out.samples.capture_windows, nullptr},
             /*keep_pc_records=*/true) {}

void SampleDecoder::Add(const v1::TracePacket& p) {
  if (rules_.Add(p, reader_.strings())) return;
  switch (p.data_case()) {
    case v1::TracePacket::kPmCounterData:
      out_.needs_model = true;  // raw samples: evaluated by TraceModel
      break;
    case v1::TracePacket::kStats:
      out_.stats.clear();
      for (const v1::StatCounter& c : p.stats().counters()) {
        out_.stats.push_back({c.name(), c.value(), c.severity(), {}});
      }
      out_.stats_final = p.stats().final();
      break;
    case v1::TracePacket::kEndOfTrace:
      out_.complete = true;
      break;
    default:
      break;  // definitions the reader keeps, notices, what this reader does not know
  }
}

void SampleDecoder::Finish() {
  const ReaderCounters& rc = reader_.counters();
  const TruncationInfo& t = reader_.truncation();
  const v1::Header& h = reader_.header();
  out_.truncation = t;
  Count("reader.truncated_bytes", t.partial_packet ? t.bytes_lost : 0);
  Count("reader.missing_end_of_trace", t.saw_end_of_trace ? 0 : 1);
  Count("reader.packets_after_end_of_trace", t.packets_after_end);
  Count("reader.undefined_string_refs", rc.undefined_string_refs);
  Count("reader.undefined_launch_config_refs", rc.undefined_launch_config_refs);
  Count("reader.undefined_thread_refs", rc.undefined_thread_refs);
  Count("reader.redefined_ids", rc.redefined_ids);
  Count("reader.unknown_packets", rc.unknown_packets);
  Count("reader.packets_with_unknown_fields", rc.packets_with_unknown_fields);
  Count("reader.extra_headers", rc.extra_headers);
  Count("reader.invalid_utf8_strings", rc.invalid_utf8_strings);
  Count("reader.newer_format_minor",
        h.format_major() == kReaderFormatMajor && h.format_minor() > kReaderFormatMinor ? 1 : 0);
  const SampleTableProblems s = rules_.Problems();
  Count("model.redefined_pm_metric_sets", s.redefined_metric_sets);
  Count("model.redefined_devices", s.redefined_devices);
  Count("model.redefined_contexts", s.redefined_contexts);
  Count("model.pm_samples_without_metric_set", s.pm_samples_without_set);
  Count("model.pm_sample_value_count_mismatch", s.pm_sample_value_mismatches);
  Count("model.pc_stall_reasons_length_mismatch", s.pc_stall_reason_length_mismatches);
  Count("model.orphan_pc_sample_continuations", s.orphan_pc_continuations);
  Count("model.incomplete_cubins", s.incomplete_cubins);
  Count("model.unmatched_capture_window_ends", s.unmatched_capture_window_ends);
}

}  // namespace warpscope::columns_internal
