// TraceModel: names and launch configs resolved, tables filled, span, stats, capture
// windows, import counters for truncated and inconsistent traces.
#include "analyzers/model/trace_model.h"

#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "analyzers/model/trace_columns.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::warpscope::testing::FixtureWire;
using ::warpscope::testing::TextprotoToWire;
using ::warpscope::testing::WriteTempFile;

TraceModel LoadWire(const std::string& wire) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(WriteTempFile(wire));
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

const StatCounter* FindCounter(const std::vector<StatCounter>& list, const std::string& name) {
  for (const StatCounter& c : list) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

TEST(TraceModelTest, LoadsTheBasicFixture) {
  TraceModel m = LoadWire(FixtureWire("synthetic/basic.textproto"));
  EXPECT_EQ(m.header.producer, "fixture:basic");
  EXPECT_EQ(m.header.pid, 4242u);
  EXPECT_THAT(m.header.command_line, ElementsAre("python", "train.py", "--epochs=1"));
  ASSERT_EQ(m.devices.size(), 1u);
  EXPECT_EQ(m.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(m.devices[0].sm_count, 132u);
  ASSERT_EQ(m.kernels.size(), 5u);
  EXPECT_EQ(m.kernels[0].name, "gemm_kernel(float const*, float const*, float*, int)");
  EXPECT_EQ(m.kernels[0].mangled_name, "_Z11gemm_kernelPKfS0_Pfi");
  ASSERT_NE(m.kernels[0].launch, nullptr);
  EXPECT_EQ(m.kernels[0].launch->threads_per_block(), 256u);
  EXPECT_EQ(m.kernels[0].launch->blocks(), 264u);
  EXPECT_EQ(m.kernels[0].launch, m.kernels[2].launch);  // one table entry per config
  EXPECT_EQ(m.memcpys.size(), 2u);
  EXPECT_EQ(m.memsets.size(), 1u);
  EXPECT_EQ(m.syncs.size(), 1u);
  EXPECT_EQ(m.api_calls.size(), 9u);
  EXPECT_EQ(m.api_calls[0].name, "cudaMemcpyAsync");
  ASSERT_EQ(m.nvtx_ranges.size(), 2u);
  EXPECT_EQ(m.nvtx_ranges[1].name, "forward");
  EXPECT_EQ(m.nvtx_ranges[1].depth, 1u);
  ASSERT_EQ(m.nvtx_marks.size(), 1u);
  EXPECT_EQ(m.nvtx_marks[0].name, "checkpoint");
  ASSERT_NE(m.FindThread(1), nullptr);
  EXPECT_EQ(m.DeviceOfContext(1), 0u);
  EXPECT_EQ(m.DeviceOfContext(9), std::nullopt);
  EXPECT_EQ(m.span.begin_ns, 1000u);
  EXPECT_EQ(m.span.end_ns, 99000u);
  EXPECT_TRUE(m.stats_final);
  EXPECT_EQ(m.stats.size(), 5u);
  ASSERT_TRUE(m.end_of_trace.has_value());
  EXPECT_EQ(m.end_of_trace->reason, v1::END_REASON_EXIT);
  EXPECT_FALSE(m.truncation.truncated());
  EXPECT_TRUE(m.import_counters.empty());
  EXPECT_EQ(m.WorstSeverity(), v1::SEVERITY_INFO);
}

// The header's place in a job: the job id as written, and the rank from the first rank
// variable (job_variables.h order) that holds a whole number.
TEST(TraceModelTest, ReadsTheJobIdAndTheRank) {
  TraceModel m = LoadWire(TextprotoToWire(R"pb(
    packet {
      header {
        format_major: 1 format_minor: 3
        rank_env { key: "SLURM_PROCID" value: "0" }
        rank_env { key: "RANK" value: "x" }
        rank_env { key: "PMIX_RANK" value: "6" }
        job_id: "TORCHELASTIC_RUN_ID=abc"
      }
    }
  )pb"));
  EXPECT_EQ(m.header.job_id, "TORCHELASTIC_RUN_ID=abc");
  EXPECT_EQ(HeaderRank(m.header), 6);
  TraceHeader none;
  EXPECT_EQ(HeaderRank(none), std::nullopt);
  none.rank_env = {{"LOCAL_RANK", "1"}, {"RANK", "-1"}};
  EXPECT_EQ(HeaderRank(none), std::nullopt);
}

TEST(TraceModelTest, ViewsSurviveMovingTheModel) {
  TraceModel m = LoadWire(FixtureWire("synthetic/basic.textproto"));
  TraceModel moved = std::move(m);
  std::vector<TraceModel> many;
  many.push_back(std::move(moved));
  many.push_back(LoadWire(FixtureWire("synthetic/killed.textproto")));
  EXPECT_EQ(many[0].kernels[1].name, "relu_kernel(float*, int)");
  EXPECT_EQ(many[0].kernels[1].launch->block_x, 128u);
}

TEST(TraceModelTest, LoadsSamplingCaptureAndBookkeeping) {
  TraceModel m = LoadWire(FixtureWire("synthetic/two_gpus.textproto"));
  EXPECT_THAT(m.DeviceIds(), ElementsAre(0u, 1u));
  ASSERT_EQ(m.capture_windows.size(), 1u);
  EXPECT_EQ(m.capture_windows[0].begin_ns, 500u);
  EXPECT_EQ(m.capture_windows[0].end_ns, 145500u);
  EXPECT_EQ(m.capture_windows[0].end_trigger, v1::CAPTURE_TRIGGER_NVTX);
  ASSERT_EQ(m.pm_samples.size(), 2u);
  const PmMetricSet* set = m.FindPmMetricSet(m.pm_samples[0].metric_set_id);
  ASSERT_NE(set, nullptr);
  EXPECT_EQ(set->metric_names[0], "sm__warps_active.avg.per_cycle_active");
  EXPECT_DOUBLE_EQ(m.pm_samples[1].values[0], 12.25);
  ASSERT_EQ(m.pc_sample_batches.size(), 1u);
  ASSERT_EQ(m.pc_sample_batches[0].records.size(), 1u);
  EXPECT_EQ(m.pc_sample_batches[0].records[0].function_name, "_Z7stencilPdPKd");
  EXPECT_THAT(
      m.pc_sample_batches[0].records[0].stall_samples,
      ElementsAre(std::pair<uint32_t, uint64_t>{3, 80}, std::pair<uint32_t, uint64_t>{7, 36}));
  ASSERT_NE(m.FindPcStallReasons(0), nullptr);
  EXPECT_EQ(m.FindPcStallReasons(0)->name_by_index.at(7),
            "smsp__pcsamp_warps_issue_stalled_barrier");
  ASSERT_EQ(m.overheads.size(), 1u);
  EXPECT_EQ(m.overheads[0].kind, "CUPTI_BUFFER_FLUSH");
  EXPECT_EQ(m.graph_launches.size(), 1u);
  EXPECT_EQ(m.nvtx_ranges[0].domain, "solver");
  ASSERT_EQ(m.notices.size(), 1u);
  EXPECT_EQ(m.notices[0].source, "pm_sampling");
  EXPECT_FALSE(m.stats_final);
  EXPECT_EQ(m.kernels[3].name, "<unknown:77>");
  const StatCounter* undefined = FindCounter(m.import_counters, "reader.undefined_string_refs");
  ASSERT_NE(undefined, nullptr);
  EXPECT_EQ(undefined->value, 1u);
  EXPECT_EQ(undefined->severity, v1::SEVERITY_ERROR);
  EXPECT_EQ(m.WorstSeverity(), v1::SEVERITY_ERROR);

  TraceModelOptions options;
  options.keep_pc_sample_records = false;
  absl::StatusOr<TraceModel> lean =
      TraceModel::Load(WriteTempFile(FixtureWire("synthetic/two_gpus.textproto")), options);
  ASSERT_TRUE(lean.ok());
  EXPECT_TRUE(lean->pc_sample_batches[0].records.empty());
  EXPECT_EQ(lean->pc_sample_batches[0].total_samples, 120u);
}

TEST(TraceModelTest, TruncatedTraceLoadsWithDataLossCounters) {
  std::string wire = FixtureWire("synthetic/killed.textproto");
  wire.resize(wire.size() - 3);  // kill -9 in the middle of the last packet
  TraceModel m = LoadWire(wire);
  EXPECT_EQ(m.kernels.size(), 2u);  // the third kernel packet was cut
  EXPECT_TRUE(m.truncation.partial_packet);
  EXPECT_FALSE(m.end_of_trace.has_value());
  const StatCounter* lost = FindCounter(m.import_counters, "reader.truncated_bytes");
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->severity, v1::SEVERITY_DATA_LOSS);
  EXPECT_EQ(lost->value, m.truncation.bytes_lost);
  ASSERT_NE(FindCounter(m.import_counters, "reader.missing_end_of_trace"), nullptr);
  EXPECT_EQ(m.WorstSeverity(), v1::SEVERITY_DATA_LOSS);
}

TEST(TraceModelTest, CountsInconsistencies) {
  TraceModel m = LoadWire(TextprotoToWire(R"(
    packet { header { format_major: 1 format_minor: 99 } }
    packet { pm_sample { metric_set_id: 4 values: 1 } }
    packet { pm_metric_set { id: 4 metric_names: "a" metric_names: "b" } }
    packet { pm_sample { metric_set_id: 4 values: 1 } }
    packet { capture_window { window_id: 2 begin: false } }
    packet { capture_window { window_id: 3 begin: true timestamp_ns: 10 } }
    packet { kernel { start_ns: 18446744073709551000 duration_ns: 1000 } }
    packet { end_of_trace {} }
  )"));
  EXPECT_EQ(FindCounter(m.import_counters, "model.pm_samples_without_metric_set")->value, 1u);
  EXPECT_EQ(FindCounter(m.import_counters, "model.pm_sample_value_count_mismatch")->value, 1u);
  EXPECT_EQ(FindCounter(m.import_counters, "model.unmatched_capture_window_ends")->value, 1u);
  EXPECT_EQ(FindCounter(m.import_counters, "model.events_with_overflowing_end")->value, 1u);
  EXPECT_EQ(FindCounter(m.import_counters, "reader.newer_format_minor")->value, 1u);
  ASSERT_EQ(m.capture_windows.size(), 1u);
  EXPECT_FALSE(m.capture_windows[0].end_ns.has_value());
}

// The columnar reader (the Python package's) counts the reader's and the sample tables'
// problems from the same list as the model: same names, values, severities and meanings.
TEST(TraceModelTest, ColumnsCountTheSameImportProblemsAsTheModel) {
  std::string cut = FixtureWire("synthetic/killed.textproto");
  cut.resize(cut.size() - 3);
  const struct {
    std::string wire;
    size_t shared;  // problems both readers count
  } cases[] = {{TextprotoToWire(R"(
                 packet { header { format_major: 1 format_minor: 99 } }
                 packet { pm_sample { metric_set_id: 4 values: 1 } }
                 packet { pm_metric_set { id: 4 metric_names: "a" metric_names: "b" } }
                 packet { pm_sample { metric_set_id: 4 values: 1 } }
                 packet { capture_window { window_id: 2 begin: false } }
                 packet { end_of_trace {} }
               )"),
                4},
               {cut, 2},
               {FixtureWire("synthetic/two_gpus.textproto"), 1}};
  for (const auto& c : cases) {
    const std::string path = WriteTempFile(c.wire);
    absl::StatusOr<TraceModel> model = TraceModel::Load(path);
    absl::StatusOr<TraceColumns> columns = TraceColumns::Decode(path);
    ASSERT_TRUE(model.ok()) << model.status();
    ASSERT_TRUE(columns.ok()) << columns.status();
    ASSERT_EQ(columns->import_counters.size(), c.shared);
    for (const StatCounter& counter : columns->import_counters) {
      const StatCounter* same = FindCounter(model->import_counters, counter.name);
      ASSERT_NE(same, nullptr) << counter.name;
      EXPECT_EQ(counter.value, same->value) << counter.name;
      EXPECT_EQ(counter.severity, same->severity) << counter.name;
      EXPECT_EQ(counter.description, same->description) << counter.name;
      EXPECT_FALSE(counter.description.empty()) << counter.name;
    }
  }
}

// Each row of a frame as text, strings by their value, for comparing two decodes.
std::vector<std::string> RowsOf(const FrameColumns& f) {
  std::vector<std::string> rows(f.rows);
  for (const ColumnData& c : f.columns) {
    for (size_t i = 0; i < f.rows; ++i) {
      std::string& row = rows[i];
      absl::StrAppend(&row, c.name, "=");
      if (!c.stored) {
        row += "0 ";
        continue;
      }
      switch (c.type) {
        case ColumnData::Type::kInt64:
          absl::StrAppend(&row, c.ints[i], " ");
          break;
        case ColumnData::Type::kBool:
          absl::StrAppend(&row, static_cast<int>(c.bools[i]), " ");
          break;
        case ColumnData::Type::kEnum:
          absl::StrAppend(&row, c.codes[i], " ");
          break;
        case ColumnData::Type::kString:
          absl::StrAppend(&row, "'", std::string(c.categories[c.codes[i]]), "' ");
          break;
      }
    }
  }
  return rows;
}

// Read in chunks of 3 rows, the rows are those of one decode (strings, threads and launch
// configurations resolved alike), and the small tables are all there at the end.
TEST(TraceColumnsTest, ChunksHoldTheRowsOfOneDecode) {
  const std::string path = WriteTempFile(FixtureWire("synthetic/basic.textproto"));
  absl::StatusOr<TraceColumns> whole = TraceColumns::Decode(path);
  ASSERT_TRUE(whole.ok()) << whole.status();
  std::map<std::string, std::vector<std::string>> chunked;
  std::vector<size_t> chunk_rows;
  absl::StatusOr<TraceColumns> rest = TraceColumns::DecodeInChunks(
      path, 3, [&](std::vector<FrameColumns>& frames, const SampleTables&) {
        size_t rows = 0;
        for (const FrameColumns& f : frames) {
          rows += f.rows;
          std::vector<std::string> text = RowsOf(f);
          chunked[f.name].insert(chunked[f.name].end(), text.begin(), text.end());
        }
        chunk_rows.push_back(rows);
        return true;
      });
  ASSERT_TRUE(rest.ok()) << rest.status();
  ASSERT_GE(chunk_rows.size(), 2u);
  for (size_t i = 0; i + 1 < chunk_rows.size(); ++i) EXPECT_EQ(chunk_rows[i], 3u);
  EXPECT_GE(chunk_rows.back(), 1u);
  size_t all_rows = 0;
  for (const FrameColumns& f : whole->frames) {
    all_rows += f.rows;
    EXPECT_EQ(chunked[f.name], RowsOf(f)) << f.name;
  }
  EXPECT_GT(all_rows, 6u);
  for (const FrameColumns& f : rest->frames) EXPECT_EQ(f.rows, 0u) << f.name;
  EXPECT_EQ(rest->samples.devices.size(), whole->samples.devices.size());
  EXPECT_EQ(rest->complete, whole->complete);
}

// PM samples go out with the chunk they were read in, each with the metric sets defined so
// far; the samples left at the end are none.
TEST(TraceColumnsTest, PmSamplesGoOutWithTheirChunk) {
  const std::string path = WriteTempFile(TextprotoToWire(R"(
    packet { header { format_major: 1 } }
    packet { pm_metric_set { id: 1 metric_names: "a" } }
    packet { pm_sample { metric_set_id: 1 start_ns: 10 values: 1 } }
    packet { kernel { start_ns: 11 duration_ns: 5 } }
    packet { pm_sample { metric_set_id: 1 start_ns: 20 values: 2 } }
    packet { pm_sample { metric_set_id: 1 start_ns: 30 values: 3 } }
    packet { pm_metric_set { id: 2 metric_names: "b" } }
    packet { pm_sample { metric_set_id: 2 start_ns: 40 values: 4 } }
    packet { kernel { start_ns: 41 duration_ns: 5 } }
    packet { end_of_trace {} }
  )"));
  absl::StatusOr<TraceColumns> whole = TraceColumns::Decode(path);
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_EQ(whole->samples.pm_samples.size(), 4u);
  std::vector<std::string> samples;  // start, value, metric of each sample handed out
  std::vector<size_t> chunk_rows;
  absl::StatusOr<TraceColumns> rest = TraceColumns::DecodeInChunks(
      path, 2, [&](std::vector<FrameColumns>& frames, const SampleTables& tables) {
        size_t rows = tables.pm_samples.size();
        for (const FrameColumns& f : frames) rows += f.rows;
        chunk_rows.push_back(rows);
        for (const PmSample& s : tables.pm_samples) {
          EXPECT_GE(s.metric_set_index, 0);
          const PmMetricSet& set = tables.pm_metric_sets[s.metric_set_index];
          samples.push_back(absl::StrCat(s.start_ns, " ", s.values[0], " ", set.metric_names[0]));
        }
        return true;
      });
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_THAT(chunk_rows, ElementsAre(2u, 2u, 2u));
  EXPECT_THAT(samples, ElementsAre("10 1 a", "20 2 a", "30 3 a", "40 4 b"));
  EXPECT_TRUE(rest->samples.pm_samples.empty());
  EXPECT_EQ(rest->samples.pm_metric_sets.size(), 2u);
}

// A PC batch goes out whole, with the continuation read after the chunk it began in.
TEST(TraceColumnsTest, PcBatchesGoOutWholeWithTheirContinuations) {
  const std::string path = WriteTempFile(TextprotoToWire(R"(
    packet { header { format_major: 1 } }
    packet { pc_stall_reasons { device_id: 0 index: 1 name: "wait" } }
    packet { pc_samples { timestamp_ns: 5 total_samples: 3
                          records { pc_offset: 16 stall_reason_index: 1 samples: 3 } } }
    packet { kernel { start_ns: 11 duration_ns: 5 } }
    packet { kernel { start_ns: 21 duration_ns: 5 } }
    packet { pc_samples { continuation: true
                          records { pc_offset: 32 stall_reason_index: 1 samples: 2 } } }
    packet { kernel { start_ns: 31 duration_ns: 5 } }
    packet { pc_samples { timestamp_ns: 40 total_samples: 1
                          records { pc_offset: 48 stall_reason_index: 1 samples: 1 } } }
    packet { end_of_trace {} }
  )"));
  absl::StatusOr<TraceColumns> whole = TraceColumns::Decode(path);
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_EQ(whole->samples.pc_sample_batches.size(), 2u);
  std::vector<std::string> batches;  // time and each record's PC of each batch handed out
  absl::StatusOr<TraceColumns> rest = TraceColumns::DecodeInChunks(
      path, 1, [&](std::vector<FrameColumns>&, const SampleTables& tables) {
        for (const PcSampleBatch& b : tables.pc_sample_batches) {
          std::string text = absl::StrCat(b.timestamp_ns, ":");
          for (const PcRecord& r : b.records) absl::StrAppend(&text, " ", r.pc_offset);
          batches.push_back(text);
        }
        return true;
      });
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_THAT(batches, ElementsAre("5: 16 32", "40: 48"));
  EXPECT_TRUE(rest->samples.pc_sample_batches.empty());
  const StatCounter* orphans = FindCounter(rest->import_counters, "model.orphan_pc_sample_continuations");
  EXPECT_TRUE(orphans == nullptr || orphans->value == 0);
}

TEST(TraceColumnsTest, ASinkThatRefusesStopsTheReading) {
  const std::string path = WriteTempFile(FixtureWire("synthetic/basic.textproto"));
  int chunks = 0;
  absl::StatusOr<TraceColumns> read =
      TraceColumns::DecodeInChunks(path, 2, [&](std::vector<FrameColumns>&, const SampleTables&) {
        ++chunks;
        return false;
      });
  EXPECT_EQ(read.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(chunks, 1);
}

// One line of values, space-separated (enums as numbers).
template <typename... Values>
void Line(std::string* out, const Values&... values) {
  std::ostringstream line;
  ((line << values << ' '), ...);
  *out += line.str() + "\n";
}

// Every event of the tables the fast decoder fills, one line each, the span and the problems.
std::string DumpEvents(const TraceModel& m) {
  std::string out;
  for (const KernelEvent& k : m.kernels) {
    Line(&out, "kernel", k.name, k.mangled_name, k.start_ns, k.duration_ns, k.device_id,
         k.context_id, k.stream_id, k.correlation_id, k.launch_config_id,
         k.launch != nullptr ? k.launch->grid_x : 0, k.graph_id, k.graph_node_id, k.grid_id);
  }
  for (const MemcpyEvent& c : m.memcpys) {
    Line(&out, "memcpy", c.copy_kind, c.src_kind, c.dst_kind, c.bytes, c.start_ns, c.duration_ns,
         c.device_id, c.stream_id, c.correlation_id, c.is_async, c.src_device_id, c.dst_device_id,
         c.graph_node_id);
  }
  for (const MemsetEvent& e : m.memsets) {
    Line(&out, "memset", e.value, e.bytes, e.memory_kind, e.start_ns, e.duration_ns, e.stream_id,
         e.correlation_id, e.is_async);
  }
  for (const SyncEvent& e : m.syncs) {
    Line(&out, "sync", e.kind, e.start_ns, e.duration_ns, e.context_id, e.stream_id,
         e.cuda_event_id, e.correlation_id, e.thread_id);
  }
  for (const ApiCallEvent& a : m.api_calls) {
    Line(&out, "api", a.domain, a.name, a.start_ns, a.duration_ns, a.thread_id, a.correlation_id,
         a.result, a.callback_id);
  }
  for (const NvtxRange& r : m.nvtx_ranges) {
    Line(&out, "nvtx", r.name, r.domain, r.category, r.color, r.start_ns, r.duration_ns,
         r.thread_id, r.end_thread_id, r.is_push_pop, r.depth);
  }
  Line(&out, "span", m.span.begin_ns, m.span.end_ns);
  for (const StatCounter& c : m.import_counters) {
    if (c.name != "reader.packets_with_unknown_fields") Line(&out, "counter", c.name, c.value);
  }
  return out;
}

// Kernels, copies, memsets, syncs, API calls and NVTX ranges are decoded from their bytes;
// an event the decoder does not expect (here: fields it does not know, in the event or in
// its packet) is parsed by protobuf instead. Both give the same events, span and problems.
TEST(TraceModelTest, DecodedAndParsedEventsGiveTheSameModel) {
  for (const char* fixture : {"synthetic/basic.textproto", "synthetic/two_gpus.textproto",
                              "synthetic/nvtx_gpu.textproto", "synthetic/stacks.textproto"}) {
    const std::string wire = FixtureWire(fixture);
    v1::Trace trace;
    ASSERT_TRUE(trace.ParseFromString(wire)) << fixture;
    const google::protobuf::OneofDescriptor* data = v1::TracePacket::descriptor()->oneof_decl(0);
    int events = 0, marked = 0;
    for (v1::TracePacket& p : *trace.mutable_packet()) {
      const google::protobuf::FieldDescriptor* member =
          p.GetReflection()->GetOneofFieldDescriptor(p, data);
      if (member == nullptr || member->message_type() == nullptr ||
          !absl::EndsWith(member->message_type()->name(), "Event")) {
        continue;  // only events: definitions must stay as they are
      }
      // In the event (which the reader does not count), and in every other packet too.
      google::protobuf::Message* event = p.GetReflection()->MutableMessage(&p, member);
      event->GetReflection()->MutableUnknownFields(event)->AddVarint(31, 7);
      if (++events % 2 == 0) {
        p.GetReflection()->MutableUnknownFields(&p)->AddVarint(63, 7);
        ++marked;
      }
    }
    const TraceModel decoded = LoadWire(wire);
    const TraceModel parsed = LoadWire(trace.SerializeAsString());
    ASSERT_GT(marked, 2) << fixture;
    EXPECT_EQ(DumpEvents(decoded), DumpEvents(parsed)) << fixture;
    EXPECT_EQ(FindCounter(decoded.import_counters, "reader.packets_with_unknown_fields"), nullptr);
    const StatCounter* unknown =
        FindCounter(parsed.import_counters, "reader.packets_with_unknown_fields");
    ASSERT_NE(unknown, nullptr) << fixture;
    EXPECT_EQ(unknown->value, static_cast<uint64_t>(marked)) << fixture;
  }
}

TEST(TraceModelTest, CountsValuesOutOfRange) {
  TraceModel m = LoadWire(FixtureWire("synthetic/out_of_range.textproto"));
  EXPECT_EQ(FindCounter(m.import_counters, "model.devices_out_of_range")->value, 1u);
  EXPECT_EQ(FindCounter(m.import_counters, "model.launch_configs_out_of_range")->value, 2u);
  EXPECT_EQ(FindCounter(m.import_counters, "model.pm_samples_out_of_range")->value, 2u);
  // The kernel and the sample that start near 2^64.
  EXPECT_EQ(FindCounter(m.import_counters, "model.events_with_overflowing_end")->value, 2u);
  EXPECT_EQ(m.WorstSeverity(), v1::SEVERITY_ERROR);
  // Kept in the tables as read: the counters and the analyses say what is wrong with them.
  ASSERT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.devices[1].max_warps_per_sm, 2147483647u);
  EXPECT_EQ(m.kernels.size(), 5u);
  EXPECT_EQ(m.pm_samples.size(), 17u);
}

TEST(TraceModelTest, ValidFixturesHaveNoValueOutOfRange) {
  for (const char* fixture : {"basic", "killed", "two_gpus"}) {
    SCOPED_TRACE(fixture);
    TraceModel m = LoadWire(FixtureWire(std::string("synthetic/") + fixture + ".textproto"));
    for (const char* counter : {"model.devices_out_of_range", "model.launch_configs_out_of_range",
                                "model.pm_samples_out_of_range"}) {
      EXPECT_EQ(FindCounter(m.import_counters, counter), nullptr) << counter;
    }
  }
}

TEST(TraceModelTest, JoinsSplitPcSampleBatches) {
  TraceModel m = LoadWire(TextprotoToWire(R"(
    packet { header { format_major: 1 } }
    packet { interned_string { id: 1 value: "_Z1fv" } }
    packet { pc_samples { device_id: 0 context_id: 1 timestamp_ns: 5 total_samples: 30
                          records { function_name_id: 1 pc_offset: 16 } } }
    packet { pc_samples { device_id: 0 context_id: 1 timestamp_ns: 5 continuation: true
                          records { function_name_id: 1 pc_offset: 32 }
                          records { function_name_id: 1 pc_offset: 48 } } }
    packet { pc_samples { device_id: 1 context_id: 2 continuation: true
                          records { function_name_id: 1 pc_offset: 64 } } }
    packet { end_of_trace {} }
  )"));
  ASSERT_EQ(m.pc_sample_batches.size(), 2u);
  EXPECT_EQ(m.pc_sample_batches[0].total_samples, 30u);
  ASSERT_EQ(m.pc_sample_batches[0].records.size(), 3u);
  EXPECT_EQ(m.pc_sample_batches[0].records[2].pc_offset, 48u);
  EXPECT_EQ(m.pc_sample_batches[1].records.size(), 1u);
  EXPECT_EQ(FindCounter(m.import_counters, "model.orphan_pc_sample_continuations")->value, 1u);
}

// A model loaded without its samples reads them again from the file: the same PC records
// (a split batch in its parts, each with its batch's fields) and the same PM samples, and the
// problems of the samples it did not keep are still counted.
TEST(TraceModelTest, ReadsSamplesAgainWhenNotKept) {
  const std::string path = WriteTempFile(TextprotoToWire(R"(
    packet { header { format_major: 1 } }
    packet { interned_string { id: 1 value: "_Z1fv" } }
    packet { pm_metric_set { id: 4 metric_names: "a" } }
    packet { pm_sample { metric_set_id: 4 start_ns: 10 duration_ns: 5 values: 2.5 } }
    packet { pm_sample { metric_set_id: 9 start_ns: 20 duration_ns: 5 values: 1 } }
    packet { pc_samples { device_id: 0 context_id: 1 timestamp_ns: 5 total_samples: 30
                          records { function_name_id: 1 pc_offset: 16 } } }
    packet { pc_samples { device_id: 0 context_id: 1 timestamp_ns: 5 continuation: true
                          records { function_name_id: 1 pc_offset: 32 } } }
    packet { end_of_trace {} }
  )"));
  TraceModelOptions lean;
  lean.keep_pm_samples = false;
  lean.keep_pc_sample_records = false;
  absl::StatusOr<TraceModel> m = TraceModel::Load(path, lean);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->pm_samples.empty());
  EXPECT_EQ(FindCounter(m->import_counters, "model.pm_samples_without_metric_set")->value, 1u);
  ASSERT_EQ(m->pc_sample_batches.size(), 1u);
  EXPECT_TRUE(m->pc_sample_batches[0].records.empty());

  std::vector<std::pair<uint64_t, uint64_t>> parts;  // (timestamp, pc offset)
  ASSERT_TRUE(ForEachPcRecords(*m, [&](const PcSampleBatch& b) {
                for (const PcRecord& r : b.records) {
                  EXPECT_EQ(r.function_name, "_Z1fv");
                  parts.emplace_back(b.timestamp_ns, r.pc_offset);
                }
              }).ok());
  EXPECT_THAT(parts, ElementsAre(std::pair<uint64_t, uint64_t>{5, 16},
                                 std::pair<uint64_t, uint64_t>{5, 32}));
  std::vector<uint64_t> starts;
  ASSERT_TRUE(ForEachPmSample(*m, [&](const PmSample& s) { starts.push_back(s.start_ns); }).ok());
  EXPECT_THAT(starts, ElementsAre(10u, 20u));

  // Kept, the same from the tables.
  absl::StatusOr<TraceModel> whole = TraceModel::Load(path);
  ASSERT_TRUE(whole.ok());
  std::vector<uint64_t> kept_starts;
  ASSERT_TRUE(
      ForEachPmSample(*whole, [&](const PmSample& s) { kept_starts.push_back(s.start_ns); }).ok());
  EXPECT_EQ(kept_starts, starts);
  size_t kept_records = 0;
  ASSERT_TRUE(ForEachPcRecords(*whole, [&](const PcSampleBatch& b) {
                kept_records += b.records.size();
              }).ok());
  EXPECT_EQ(kept_records, 2u);
}

TEST(TraceModelTest, JoinsCubinPartsAndLeavesIncompleteCubinsOut) {
  TraceModel m = LoadWire(TextprotoToWire(R"(
    packet { header { format_major: 1 } }
    packet { cubin { crc: 1 device_id: 0 image: "whole" total_bytes: 5 } }
    packet { cubin { crc: 2 image: "abc" offset: 0 total_bytes: 7 } }
    packet { cubin { crc: 2 image: "defg" offset: 3 total_bytes: 7 } }
    packet { cubin { crc: 3 image: "abc" offset: 0 total_bytes: 9 } }
    packet { cubin { crc: 3 image: "ghi" offset: 6 total_bytes: 9 } }
    packet { cubin { crc: 4 image: "old writer" } }
    packet { end_of_trace {} }
  )"));
  ASSERT_NE(m.FindCubin(1), nullptr);
  EXPECT_EQ(*m.FindCubin(1), "whole");
  ASSERT_NE(m.FindCubin(2), nullptr);
  EXPECT_EQ(*m.FindCubin(2), "abcdefg");
  EXPECT_EQ(m.FindCubin(3), nullptr);  // the part at offset 3 is missing
  ASSERT_NE(m.FindCubin(4), nullptr);
  EXPECT_EQ(m.FindCubin(5), nullptr);
  EXPECT_EQ(FindCounter(m.import_counters, "model.incomplete_cubins")->value, 1u);
}

TEST(TraceModelTest, CorruptTraceFailsToLoad) {
  std::string wire = FixtureWire("synthetic/basic.textproto");
  wire += std::string("\x0a\x02\x3f\x00", 4);  // a packet with an invalid wire type
  absl::StatusOr<TraceModel> m = TraceModel::Load(WriteTempFile(wire));
  EXPECT_EQ(m.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(m.status().message(), HasSubstr("corrupt data at byte offset"));
}

}  // namespace
}  // namespace warpscope
