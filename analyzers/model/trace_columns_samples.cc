// TraceColumns' small tables (trace_columns_internal.h): devices, contexts, PM and PC samples,
// capture windows, call stacks (by the rules TraceModel applies: trace_model_samples.h), stats
// and the import counters.
#include "analyzers/model/import_problems.h"
#include "analyzers/model/trace_columns_internal.h"

namespace warpscope::columns_internal {

SampleDecoder::SampleDecoder(TraceReader& reader, TraceColumns& out)
    : reader_(reader),
      out_(out),
      rules_({out.samples.devices, out.samples.contexts, out.samples.pm_metric_sets,
              out.samples.pm_samples, out.samples.pc_stall_reasons, out.samples.pc_sample_batches,
              out.samples.capture_windows, nullptr},
             SampleKeeping{}) {}

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
  CallStackTables(reader_, out_.samples.stack_frames, out_.samples.call_stacks);
  out_.truncation = reader_.truncation();
  AppendReaderProblems(reader_, out_.truncation, &out_.import_counters);
  AppendSampleProblems(rules_.Problems(), &out_.import_counters);
}

}  // namespace warpscope::columns_internal
