// String interning: InternString, InternLaunchConfig and InternThread write a value once as
// its own packet and return its id; a value is remembered only after its packet is in the
// stream, so no packet refers to an id the file lacks.
#include <string>
#include <string_view>

#include "proto/writer/string_interning.h"
#include "proto/writer/writer_impl.h"
#include "warpscope/v1/trace_encoders.h"

namespace warpscope {

using wire::BufferSink;
using writer_internal::kMaxInternedConfigs;
using writer_internal::kMaxInternedStringBytes;
using writer_internal::kMaxInternedThreads;
using writer_internal::Packet;

namespace {

// Remembers a value written under `id`, unless the table is at its bound or out of memory
// (counted; the value is then written again on its next use).
template <typename Table, typename Key>
void RememberInterned(TraceWriter::Impl& w, Table& table, size_t bound, const Key& key,
                      uint64_t id) {
  if (table.size() >= bound) {
    w.intern_table_full.Add(1);
    return;
  }
  try {
    table.emplace(key, id);
  } catch (...) {
    w.intern_failed.Add(1);
  }
}

}  // namespace

uint64_t TraceWriter::Batch::InternString(std::string_view value) {
  if (!locked_ || value.empty()) return 0;
  Impl& w = *writer_.impl_;
  writer_internal::InternTables& t = w.interned;
  if (auto it = t.strings.find(value); it != t.strings.end()) return it->second;
  if (w.RefuseIfClosed()) return 0;
  const uint64_t id = t.next_string_id;
  if (!w.EmitSized(Packet::kInternedString,
                   [&](auto& s) { writer_internal::EncodeInternedString(s, id, value); })) {
    return 0;  // Not remembered: no later packet may refer to an id the file lacks.
  }
  ++t.next_string_id;
  // Remembered only after the packet is in the stream; if remembering fails the id is still
  // valid, and the next use writes the string again under a new id.
  if (t.string_bytes + value.size() > kMaxInternedStringBytes) {
    w.intern_table_full.Add(1);
    return id;
  }
  try {
    t.strings.emplace(std::string(value), id);
    t.string_bytes += value.size() + sizeof(std::string) + sizeof(uint64_t);
  } catch (...) {
    w.intern_failed.Add(1);
  }
  return id;
}

uint64_t TraceWriter::Batch::InternLaunchConfig(const LaunchConfigRecord& c) {
  if (!locked_) return 0;
  Impl& w = *writer_.impl_;
  writer_internal::InternTables& t = w.interned;
  if (auto it = t.configs.find(c); it != t.configs.end()) return it->second;
  const uint64_t id = t.next_config_id;
  static_assert(writer_internal::kMaxLaunchConfigBytes <= writer_internal::kSmallBodyBytes);
  if (!w.EmitSmall(Packet::kLaunchConfig,
                   [&](BufferSink& s) { writer_internal::EncodeLaunchConfig(s, c, id); })) {
    return 0;
  }
  ++t.next_config_id;
  RememberInterned(w, t.configs, kMaxInternedConfigs, c, id);
  return id;
}

uint64_t TraceWriter::Batch::InternThread(uint64_t cupti_thread_id, uint32_t os_tid,
                                          std::string_view name) {
  if (!locked_) return 0;
  Impl& w = *writer_.impl_;
  writer_internal::InternTables& t = w.interned;
  // A thread known only by its tid gets a key that no pthread id (a pointer) takes.
  const uint64_t key = cupti_thread_id != 0 ? cupti_thread_id : (uint64_t{1} << 63) | os_tid;
  if (auto it = t.threads.find(key); it != t.threads.end()) return it->second;
  if (w.RefuseIfClosed()) return 0;
  const uint64_t id = t.next_thread_id;
  if (!w.EmitSized(Packet::kThread, [&](auto& s) {
        writer_internal::EncodeThreadInfo(s, id, cupti_thread_id, os_tid, name);
      })) {
    return 0;
  }
  ++t.next_thread_id;
  RememberInterned(w, t.threads, kMaxInternedThreads, key, id);
  return id;
}

}  // namespace warpscope
