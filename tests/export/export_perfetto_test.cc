// The Perfetto export on tests/export/export_small.textproto, decoded with the generated
// classes of analyses/export_perfetto.proto: the structure Perfetto's importer relies on
// (declared tracks, interned strings defined before use, slices balanced and nested per
// track, flows paired, counters on counter tracks), the same events as the Chrome export of
// the same trace, and the fixture's events on the tracks where they belong.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzers/analyses/export/export_chrome.h"
#include "analyzers/analyses/export/export_common.h"
#include "analyzers/analyses/export/export_perfetto.h"
#include "analyzers/analyses/export/export_perfetto.pb.h"
#include "analyzers/analyses/export/spill_sort.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/export/export_fixture.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

namespace pe = perfetto_export;
using ::warpscope::testing::CliResult;
using ::warpscope::testing::ExportFixturePath;
using ::warpscope::testing::MakeTempDir;
using ::warpscope::testing::ReadFileOrDie;
using ::warpscope::testing::RunCli;

TraceModel Load(const std::string& path) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(path);
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

// What a decoded export holds, with interned names resolved as Perfetto resolves them.
struct Decoded {
  std::map<uint64_t, pe::TrackDescriptor> tracks;
  struct Event {
    uint64_t ns = 0;
    pe::TrackEvent event;
    std::string name;  // resolved
  };
  std::vector<Event> events;
  uint32_t clock = 0;
};

// Decodes `bytes` and checks what must hold of every Perfetto trace warpscope writes.
Decoded DecodeAndCheck(const std::string& bytes) {
  pe::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(bytes));
  Decoded out;
  std::map<uint64_t, std::string> names, categories, arg_names;
  auto define = [](std::map<uint64_t, std::string>& table, const auto& list) {
    for (const pe::InternedString& s : list) {
      EXPECT_TRUE(table.emplace(s.iid(), s.name()).second) << "iid " << s.iid() << " twice";
    }
  };
  EXPECT_GT(trace.packet_size(), 0);
  for (int i = 0; i < trace.packet_size(); ++i) {
    const pe::TracePacket& p = trace.packet(i);
    EXPECT_EQ(p.trusted_packet_sequence_id(), 1u);
    if (i == 0) {
      EXPECT_TRUE(p.has_clock_snapshot());
      EXPECT_EQ(p.sequence_flags(), pe::SEQ_INCREMENTAL_STATE_CLEARED);
      out.clock = p.clock_snapshot().primary_trace_clock();
      EXPECT_EQ(p.clock_snapshot().clocks(0).clock_id(), out.clock);
    }
    define(names, p.interned_data().event_names());
    define(categories, p.interned_data().event_categories());
    define(arg_names, p.interned_data().debug_annotation_names());
    if (p.has_track_descriptor()) {
      const pe::TrackDescriptor& d = p.track_descriptor();
      EXPECT_TRUE(out.events.empty()) << "track declared after events";
      EXPECT_TRUE(out.tracks.emplace(d.uuid(), d).second) << "uuid " << d.uuid() << " twice";
      if (d.has_parent_uuid()) {
        EXPECT_TRUE(out.tracks.count(d.parent_uuid())) << d.name();
      }
    }
    if (!p.has_track_event()) continue;
    const pe::TrackEvent& e = p.track_event();
    EXPECT_EQ(p.timestamp_clock_id(), out.clock);
    EXPECT_EQ(p.sequence_flags(), pe::SEQ_NEEDS_INCREMENTAL_STATE);
    EXPECT_TRUE(out.tracks.count(e.track_uuid())) << "undeclared track " << e.track_uuid();
    if (!out.events.empty()) {
      EXPECT_GE(p.timestamp(), out.events.back().ns) << "out of order";
    }
    std::string name;
    if (e.has_name_iid()) {
      EXPECT_TRUE(names.count(e.name_iid())) << "name iid " << e.name_iid() << " undefined";
      name = names[e.name_iid()];
    }
    for (uint64_t c : e.category_iids()) EXPECT_TRUE(categories.count(c)) << "category " << c;
    for (const pe::DebugAnnotation& a : e.debug_annotations()) {
      EXPECT_TRUE(arg_names.count(a.name_iid())) << "argument name " << a.name_iid();
    }
    EXPECT_FALSE(e.has_name()) << "a name not interned: " << e.name();
    out.events.push_back({p.timestamp(), e, name});
  }
  // Per track: slices balanced and nested, counters only on counter tracks and back.
  std::map<uint64_t, int> depth;
  std::map<uint64_t, size_t> flow_starts, flow_ends;
  for (const Decoded::Event& d : out.events) {
    const pe::TrackEvent& e = d.event;
    const bool counter_track = out.tracks[e.track_uuid()].has_counter();
    EXPECT_EQ(counter_track, e.type() == pe::TrackEvent::TYPE_COUNTER) << d.name;
    if (e.type() == pe::TrackEvent::TYPE_SLICE_BEGIN) ++depth[e.track_uuid()];
    if (e.type() == pe::TrackEvent::TYPE_SLICE_END) {
      EXPECT_GT(depth[e.track_uuid()]--, 0) << "an end without a begin on "
                                            << out.tracks[e.track_uuid()].name();
    }
    // Slices and instants are named; an end closes the open slice, a counter is its track's.
    if (e.type() == pe::TrackEvent::TYPE_SLICE_BEGIN || e.type() == pe::TrackEvent::TYPE_INSTANT) {
      EXPECT_FALSE(d.name.empty());
    }
    for (uint64_t id : e.flow_ids()) ++flow_starts[id];
    for (uint64_t id : e.terminating_flow_ids()) ++flow_ends[id];
  }
  for (const auto& [track, open] : depth) EXPECT_EQ(open, 0) << out.tracks[track].name();
  EXPECT_EQ(flow_starts.size(), flow_ends.size());
  for (const auto& [id, n] : flow_starts) {
    EXPECT_EQ(n, 1u) << "flow " << id;
    EXPECT_EQ(flow_ends[id], 1u) << "flow " << id << " does not end once";
  }
  return out;
}

size_t CountType(const Decoded& d, pe::TrackEvent::Type type) {
  size_t n = 0;
  for (const Decoded::Event& e : d.events) n += e.event.type() == type;
  return n;
}

size_t CountFlows(const Decoded& d) {
  size_t n = 0;
  for (const Decoded::Event& e : d.events) n += e.event.flow_ids_size();
  return n;
}

// Events of each kind ("ph") in the Chrome export.
std::map<std::string, size_t> ChromeCounts(const std::string& json) {
  google::protobuf::Struct root;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &root).ok());
  std::map<std::string, size_t> counts;
  for (const auto& e : root.fields().at("traceEvents").list_value().values()) {
    ++counts[e.struct_value().fields().at("ph").string_value()];
  }
  return counts;
}

const Decoded::Event* FindSlice(const Decoded& d, const std::string& name) {
  for (const Decoded::Event& e : d.events) {
    if (e.name == name && e.event.type() == pe::TrackEvent::TYPE_SLICE_BEGIN) return &e;
  }
  return nullptr;
}

TEST(ExportPerfettoTest, SameEventsAsTheChromeExport) {
  const TraceModel rank0 = Load(ExportFixturePath(0, "0"));
  const TraceModel rank1 = Load(ExportFixturePath(5'000, "1"));
  const std::vector<const TraceModel*> models = {&rank0, &rank1};
  const Decoded d = DecodeAndCheck(ExportPerfettoTrace(models).value());
  std::map<std::string, size_t> chrome = ChromeCounts(ExportChromeTraceJson(models));
  // Complete and async slices are begin/end pairs; instants, counters and flows one each.
  EXPECT_EQ(CountType(d, pe::TrackEvent::TYPE_SLICE_BEGIN), chrome["X"] + chrome["b"]);
  EXPECT_EQ(CountType(d, pe::TrackEvent::TYPE_SLICE_END), chrome["X"] + chrome["e"]);
  EXPECT_EQ(CountType(d, pe::TrackEvent::TYPE_INSTANT), chrome["i"]);
  EXPECT_EQ(CountType(d, pe::TrackEvent::TYPE_COUNTER), chrome["C"]);
  EXPECT_EQ(CountFlows(d), chrome["s"]);
  EXPECT_GT(chrome["X"], 0u);
  EXPECT_GT(chrome["s"], 0u);
  EXPECT_GT(chrome["C"], 0u);
  // One process per trace, pids by position as in the Chrome export, each named after its
  // rank so that the ranks load side by side.
  std::set<int> pids;
  std::set<std::string> names;
  for (const auto& [uuid, t] : d.tracks) {
    if (!t.has_process()) continue;
    pids.insert(t.process().pid());
    names.insert(t.process().process_name());
  }
  EXPECT_EQ(pids, (std::set<int>{1, 2}));
  EXPECT_EQ(names,
            (std::set<std::string>{"rank 0: node-7 (pid 4242)", "rank 1: node-7 (pid 4242)"}));
}

TEST(ExportPerfettoTest, FixtureEventsOnTheirTracks) {
  const TraceModel model = Load(ExportFixturePath(0, "3"));
  const std::vector<const TraceModel*> models = {&model};
  const Decoded d = DecodeAndCheck(ExportPerfettoTrace(models).value());
  // A synthetic clock is declared as boottime, times from the trace's time 0.
  EXPECT_EQ(d.clock, static_cast<uint32_t>(pe::BUILTIN_CLOCK_BOOTTIME));
  std::map<std::string, uint64_t> by_name;
  for (const auto& [uuid, t] : d.tracks) {
    if (t.has_process()) {
      EXPECT_EQ(t.process().process_name(), "rank 3: node-7 (pid 4242)");
      by_name["process"] = uuid;
    } else if (t.has_thread()) {
      by_name[t.thread().thread_name()] = uuid;
      EXPECT_EQ(t.thread().pid(), 1);
    } else {
      by_name[t.name()] = uuid;
      EXPECT_EQ(t.parent_uuid(), by_name["process"]) << t.name();
    }
  }
  ASSERT_TRUE(by_name.count("main 100") && by_name.count("loader 200"));
  ASSERT_TRUE(by_name.count("GPU 0 stream 7") && by_name.count("GPU 0 stream 9"));
  EXPECT_TRUE(by_name.count("capture windows"));
  EXPECT_TRUE(by_name.count("NVTX start/end ranges"));
  const Decoded::Event* gemm = FindSlice(d, "void gemm<float, 4>(float const*, int)");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->ns, 10000u);
  EXPECT_EQ(gemm->event.track_uuid(), by_name["GPU 0 stream 7"]);
  EXPECT_EQ(gemm->event.terminating_flow_ids_size(), 1);
  const Decoded::Event* step = FindSlice(d, "step");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->ns, 1000u);
  EXPECT_EQ(step->event.track_uuid(), by_name["main 100"]);
  const Decoded::Event* memset = FindSlice(d, "[CUDA memset]");
  ASSERT_NE(memset, nullptr);
  EXPECT_EQ(memset->event.track_uuid(), by_name["GPU 0 stream 9"]);
  // The kernel without an API record has no flow.
  const Decoded::Event* orphan = FindSlice(d, "orphan(int*)");
  ASSERT_NE(orphan, nullptr);
  EXPECT_EQ(orphan->event.terminating_flow_ids_size(), 0);
}

// Slices whose times cross cannot share a Perfetto track: the second goes to a lane beside.
TEST(StackSlicesTest, CrossingSlicesGoToAnotherLane) {
  const std::vector<SliceInterval> slices = {{0, 100}, {10, 20}, {50, 150}, {100, 120}, {20, 30}};
  std::vector<uint32_t> order;
  const std::vector<SlicePlace> places = StackSlices(slices, &order);
  EXPECT_EQ(places[0].lane, 0u);
  EXPECT_EQ(places[0].depth, 0u);
  EXPECT_EQ(places[1].lane, 0u);
  EXPECT_EQ(places[1].depth, 1u);
  EXPECT_EQ(places[4].lane, 0u);  // follows [10, 20] inside [0, 100]
  EXPECT_EQ(places[4].depth, 1u);
  EXPECT_EQ(places[2].lane, 1u);  // crosses [0, 100]
  EXPECT_EQ(places[3].lane, 0u);  // after [0, 100] ended
  EXPECT_EQ(places[3].depth, 0u);
  EXPECT_EQ(order, (std::vector<uint32_t>{0, 1, 4, 2, 3}));
}

// The sort the export puts its events through: runs written to temporary files once the
// budget is reached, merged back in key order, records with equal keys in the order added.
TEST(SpillSorterTest, MergesRunsInKeyOrderKeepingTheOrderAdded) {
  SpillSorter sorter(/*budget_bytes=*/200);  // a run every few records
  std::vector<std::pair<SpillSorter::Key, std::string>> added;
  for (uint64_t i = 0; i < 500; ++i) {
    const SpillSorter::Key key = {(i * 7919) % 13, i % 3, 0, 0};
    added.emplace_back(key, std::string(i % 5, 'x') + std::to_string(i));
    ASSERT_TRUE(sorter.Add(key, added.back().second).ok());
  }
  std::stable_sort(added.begin(), added.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<SpillSorter::Key, std::string>> drained;
  ASSERT_TRUE(sorter
                  .Drain([&](const SpillSorter::Key& key, std::string_view bytes) {
                    drained.emplace_back(key, std::string(bytes));
                  })
                  .ok());
  EXPECT_EQ(drained, added);
  // Drained: empty, and usable again.
  size_t more = 0;
  ASSERT_TRUE(sorter.Drain([&](const SpillSorter::Key&, std::string_view) { ++more; }).ok());
  EXPECT_EQ(more, 0u);
}

// A run that cannot be written is an error that says where the files go.
TEST(SpillSorterTest, SaysWhenItCannotWriteARun) {
  const char* before = std::getenv("TMPDIR");
  const std::string kept = before != nullptr ? before : "";
  ::setenv("TMPDIR", "/nonexistent-warpscope-dir", 1);
  SpillSorter sorter(/*budget_bytes=*/10);
  const absl::Status s = sorter.Add({1, 2, 3, 4}, "0123456789");
  if (before != nullptr) {
    ::setenv("TMPDIR", kept.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("set TMPDIR to a directory"));
}

// The CLI reads the events from the file kind by kind and sorts them through temporary
// files; the bytes are those of the export of the whole model in memory.
TEST(ExportPerfettoCliTest, WritesTheBinaryTrace) {
  const std::string out = MakeTempDir() + "/trace.pftrace";
  CliResult r = RunCli("export " + ExportFixturePath(0, "3") + " --format perfetto -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string bytes = ReadFileOrDie(out);
  const Decoded d = DecodeAndCheck(bytes);
  EXPECT_NE(FindSlice(d, "softmax(float*)"), nullptr);
  const TraceModel model = Load(ExportFixturePath(0, "3"));
  const std::vector<const TraceModel*> models = {&model};
  EXPECT_EQ(bytes, ExportPerfettoTrace(models).value());
}

// Ten steps of a bundled trace (--step, analyses/slice.h): a valid trace by every check above,
// with only the events of those steps.
TEST(ExportPerfettoCliTest, WritesAValidTraceOfTenSteps) {
  const std::string trace =
      testing::SourceDir() + "/examples/traces/cuda13.0_sm90/pipeline_pm.wst";
  const std::string dir = MakeTempDir();
  CliResult sliced =
      RunCli("export " + trace + " --step 100-109 --format perfetto -o " + dir + "/s.pftrace");
  ASSERT_EQ(sliced.exit_code, 0) << sliced.err;
  CliResult whole = RunCli("export " + trace + " --format perfetto -o " + dir + "/w.pftrace");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const Decoded d = DecodeAndCheck(ReadFileOrDie(dir + "/s.pftrace"));
  const Decoded w = DecodeAndCheck(ReadFileOrDie(dir + "/w.pftrace"));
  size_t steps = 0;
  for (const Decoded::Event& e : d.events) steps += e.name == "train_step" ? 1 : 0;
  EXPECT_EQ(steps, 10u);
  EXPECT_LT(d.events.size() * 20, w.events.size());
  EXPECT_NE(FindSlice(d, "scale_balanced(float*, int, int)"), nullptr);
}

}  // namespace
}  // namespace warpscope
