// What the next-file and flight-recorder tests check of every file the writer made, as a
// reader would: whole packets, Header first and EndOfTrace last, a final Stats whose writer
// counters agree with the packets of that file, and every id a kernel or API call refers to
// defined once, before it.
#ifndef WARPSCOPE_TESTS_WRITER_TRACE_FILE_CHECKS_H_
#define WARPSCOPE_TESTS_WRITER_TRACE_FILE_CHECKS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/writer/writer_test_support.h"

namespace warpscope::writer_test {

struct CheckedFile {
  testing::PacketStream stream;
  std::vector<const pb::TracePacket*> kernels;
  std::map<uint64_t, std::string> strings;  // Interned strings by id.
  const pb::TracePacket* end = nullptr;
  const pb::Stats* final_stats = nullptr;
};

inline CheckedFile CheckTraceFile(const std::string& path) {
  CheckedFile f;
  f.stream = ParsePacketFile(path);
  EXPECT_FALSE(f.stream.malformed) << path;
  EXPECT_FALSE(f.stream.truncated) << path;
  const auto& packets = f.stream.packets;
  if (packets.size() < 3) {
    ADD_FAILURE() << path << " has " << packets.size() << " packets";
    return f;
  }
  EXPECT_TRUE(packets.front().packet.has_header()) << path;
  EXPECT_TRUE(packets.back().packet.has_end_of_trace()) << path;
  f.end = &packets.back().packet;
  std::set<uint64_t> configs, threads;
  uint64_t events = 0;
  std::map<std::string, uint64_t> per_kind;
  for (size_t i = 0; i < packets.size(); ++i) {
    const pb::TracePacket& p = packets[i].packet;
    const auto* field = pb::TracePacket::descriptor()->FindFieldByNumber(p.data_case());
    if (p.has_stats()) {
      // Counters of this file up to here; bytes: the packets before this one.
      EXPECT_EQ(StatValue(p.stats(), "writer.events_written"), events) << path << " #" << i;
      EXPECT_EQ(StatValue(p.stats(), "writer.bytes_written"), packets[i].offset) << path;
      for (const auto& [kind, n] : per_kind) {
        EXPECT_EQ(StatValue(p.stats(), "writer.events_written." + kind), n) << path << kind;
      }
      if (p.stats().final()) f.final_stats = &p.stats();
      continue;
    }
    if (p.has_header() || p.has_end_of_trace()) continue;
    ++events;
    ++per_kind[field->name()];
    if (p.has_interned_string()) {
      EXPECT_TRUE(f.strings.emplace(p.interned_string().id(), p.interned_string().value()).second)
          << path << ": string " << p.interned_string().id() << " defined twice";
    } else if (p.has_launch_config()) {
      EXPECT_TRUE(configs.insert(p.launch_config().id()).second) << path;
    } else if (p.has_thread()) {
      EXPECT_TRUE(threads.insert(p.thread().id()).second) << path;
    } else if (p.has_kernel()) {
      const pb::KernelEvent& k = p.kernel();
      EXPECT_TRUE(k.name_id() == 0 || f.strings.contains(k.name_id())) << path;
      EXPECT_TRUE(k.launch_config_id() == 0 || configs.contains(k.launch_config_id())) << path;
      f.kernels.push_back(&p);
    } else if (p.has_api_call()) {
      EXPECT_TRUE(f.strings.contains(p.api_call().name_id())) << path;
      EXPECT_TRUE(threads.contains(p.api_call().thread_id())) << path;
    }
  }
  EXPECT_NE(f.final_stats, nullptr) << path;
  return f;
}

}  // namespace warpscope::writer_test

#endif  // WARPSCOPE_TESTS_WRITER_TRACE_FILE_CHECKS_H_
