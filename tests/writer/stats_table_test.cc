// The stats table against what uses it: docs/format.md lists exactly its rows (name,
// severity, meaning), names are unique, and the writer writes its counters with the table's
// severities.
#include "proto/writer/stats_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>

#include "proto/writer/trace_writer.h"
#include "proto/writer/writer_stats.h"
#include "tests/writer/counter_table_docs.h"
#include "tests/writer/packet_stream.h"

namespace warpscope {
namespace {

TEST(StatsTable, NamesAreUniqueAndFound) {
  std::set<std::string_view> names;
  for (const StatDef* stat : AllStats()) {
    EXPECT_TRUE(names.insert(stat->name).second) << stat->name;
    EXPECT_EQ(FindStat(stat->name), stat) << stat->name;
    EXPECT_FALSE(stat->meaning.empty()) << stat->name;
  }
  EXPECT_EQ(FindStat("collector_errors.pm_sampling"), &stats::kCollectorErrors);
  EXPECT_EQ(FindStat("writer.events_written.kernel"), &stats::kWriterEventsWrittenKind);
  EXPECT_EQ(FindStat("writer.events_written"), &stats::kWriterEventsWritten);
  EXPECT_EQ(FindStat("no.such_counter"), nullptr);
}

// Fails when a counter is missing from docs/format.md or from the table, or when the two
// disagree on its severity or meaning. The row the docs need is printed.
TEST(StatsTable, FormatMdListsEveryCounterOfTheTable) {
  testing::ExpectDocsListTable(AllStats(), "stats table", "proto/writer/stats_table.h");
}

// Every event kind of the schema has its writer.events_written.<field> counter, a member of
// the table's family row.
TEST(StatsTable, EveryEventKindHasItsWrittenCounter) {
  const google::protobuf::Descriptor* packet = v1::TracePacket::descriptor();
  size_t kinds = 0;
  for (int i = 0; i < packet->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = packet->field(i);
    const std::string_view name = writer_internal::kKindCounterNames.at(field->number());
    if (field->name() == "header" || field->name() == "stats" || field->name() == "end_of_trace") {
      EXPECT_EQ(name, "") << field->name();
      continue;
    }
    EXPECT_EQ(name, StatFamilyMember(stats::kWriterEventsWrittenKind, field->name()));
    EXPECT_EQ(FindStat(name), &stats::kWriterEventsWrittenKind) << name;
    ++kinds;
  }
  EXPECT_GE(kinds, 22u);
}

TEST(StatsTable, WriterWritesItsCountersWithTheTablesSeverity) {
  testing::TempDir dir;
  const std::string path = dir.File("stats.wst");
  TraceWriterOptions options;
  options.path = path;
  options.stats_interval_ms = 0;
  HeaderRecord header;
  std::string error;
  auto writer = TraceWriter::Open(options, header, &error);
  ASSERT_NE(writer, nullptr) << error;
  ASSERT_TRUE(writer->Write(KernelRecord{.start_ns = 5, .end_ns = 1}));  // Clamped.
  AddToStat(*writer, stats::kCuptiDroppedRecords, 3);
  SetStat(*writer, stats::kPmGapNs, 7);
  writer->Close(EndReason::kExit, 10);
  writer.reset();
  const testing::PacketStream stream = testing::ParsePacketFile(path);
  ASSERT_FALSE(stream.malformed);
  size_t checked = 0;
  for (const testing::ParsedPacket& parsed : stream.packets) {
    const v1::TracePacket& p = parsed.packet;
    if (!p.has_stats()) continue;
    for (const v1::StatCounter& c : p.stats().counters()) {
      const StatDef* stat = FindStat(c.name());
      ASSERT_NE(stat, nullptr) << c.name() << " is not in the stats table";
      EXPECT_EQ(static_cast<uint32_t>(c.severity()), static_cast<uint32_t>(stat->severity))
          << c.name();
      ++checked;
    }
  }
  EXPECT_GE(checked, 9u);
}

}  // namespace
}  // namespace warpscope
