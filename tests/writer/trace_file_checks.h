// What the next-file and flight-recorder tests check of every file the writer made, as a
// reader would: whole packets, Header first and EndOfTrace last, a final Stats whose writer
// counters agree with the packets of that file, and every id a kernel or API call refers to
// defined once, before it. And writers on several threads whose kernels are counted and
// checked for order over such files.
#ifndef WARPSCOPE_TESTS_WRITER_TRACE_FILE_CHECKS_H_
#define WARPSCOPE_TESTS_WRITER_TRACE_FILE_CHECKS_H_

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
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

// Threads that each write `per_thread` kernels named "kernel_<t>" on stream t, with
// correlation ids 1, 2, ...
class KernelWriters {
 public:
  KernelWriters(TraceWriter& writer, int threads, uint32_t per_thread)
      : last_(threads, 0), per_thread_(per_thread) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, &writer, t] {
        const uint64_t name = writer.InternString("kernel_" + std::to_string(t));
        for (uint32_t i = 1; i <= per_thread_; ++i) {
          KernelRecord k = FileTestKernel(i, name);
          k.stream_id = static_cast<uint32_t>(t);
          if (!writer.Write(k)) refused_.fetch_add(1);
        }
      });
    }
  }
  void Join() {
    for (std::thread& t : threads_) t.join();
  }
  uint64_t refused() const { return refused_.load(); }
  uint64_t written() const { return uint64_t{per_thread_} * last_.size(); }
  uint64_t found() const { return found_; }

  // The kernels of the next file: each thread's come after those of the files before, in
  // order, and carry their names.
  void ExpectInOrder(const CheckedFile& f) {
    for (const pb::TracePacket* p : f.kernels) {
      const pb::KernelEvent& k = p->kernel();
      ASSERT_LT(k.stream_id(), last_.size());
      EXPECT_EQ(f.strings.at(k.name_id()), "kernel_" + std::to_string(k.stream_id()));
      EXPECT_GT(k.correlation_id(), last_[k.stream_id()]);
      last_[k.stream_id()] = k.correlation_id();
      ++found_;
    }
  }

 private:
  std::vector<uint32_t> last_;
  uint32_t per_thread_;
  std::atomic<uint64_t> refused_{0};
  uint64_t found_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace warpscope::writer_test

#endif  // WARPSCOPE_TESTS_WRITER_TRACE_FILE_CHECKS_H_
