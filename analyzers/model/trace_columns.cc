// TraceColumns::Decode (trace_columns.h): TraceReader frames the packets; the events of the
// large tables are decoded from their bytes straight into columns, each column described once
// (kEventTables) and its field found in the schema's descriptor. A packet the fast decoder
// does not expect (a field it does not know, another wire type, two members set) is parsed
// by TraceReader like any other, so that both give the same values, counters and errors.
// Definitions and the small tables (samples, descriptions) are parsed and kept as the model
// keeps them (trace_columns_samples.cc).
#include "analyzers/model/trace_columns.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analyzers/model/trace_columns_internal.h"
#include "analyzers/model/wire_fields.h"

namespace warpscope {

namespace columns_internal {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using wire_fields::FieldValues;
using wire_fields::MessageFields;
using wire_fields::ParseVarint;

// Values by id with a dense part for the small ids the writer gives (counting from 1) and a
// map for stray ones, so that a corrupt id cannot make it allocate much.
template <typename T>
class IdCache {
 public:
  const T* Find(uint64_t id) const {
    if (id < dense_.size() && dense_[id].has_value()) return &*dense_[id];
    if (sparse_.empty()) return nullptr;
    auto it = sparse_.find(id);
    return it == sparse_.end() ? nullptr : &it->second;
  }
  const T& Set(uint64_t id, T value) {
    constexpr uint64_t kMaxDense = 1u << 20, kSlack = 1u << 12;
    if (id >= dense_.size() && id < kMaxDense && id < dense_.size() + kSlack) {
      dense_.resize(std::min<uint64_t>(kMaxDense, std::max<uint64_t>(id + 1, 2 * dense_.size())));
    }
    if (id < dense_.size()) {
      sparse_.erase(id);
      return *(dense_[id] = std::move(value));
    }
    return sparse_[id] = std::move(value);
  }
  void Erase(uint64_t id) {
    if (id < dense_.size()) dense_[id].reset();
    sparse_.erase(id);
  }

 private:
  std::vector<std::optional<T>> dense_;
  std::unordered_map<uint64_t, T> sparse_;
};

// What an event resolves an id to; `defined`: the reader has a definition (else the event
// is counted as a reference to an undefined id).
struct ThreadInForce {
  int64_t os_tid = 0;
  int32_t name = 0;  // dictionary code
  bool defined = false;
};
struct StringInForce {
  int32_t code = 0;      // dictionary code
  bool defined = false;  // or id 0: nothing for TraceReader::CheckString to count
};
struct LaunchInForce {
  uint32_t slot = 0;  // in EventDecoder::launch_values_
  bool defined = false;
};

// Decodes the event tables (EventTables()) into columns.
class EventDecoder {
 public:
  explicit EventDecoder(TraceReader& reader, TraceColumns& out);

  // Decodes an event packet from its bytes; false when it is not one it can (then the caller
  // parses it and hands it to AddParsed).
  bool TryDecode(std::string_view payload);
  // An event packet parsed by TraceReader (references already checked).
  void AddParsed(const v1::TracePacket& packet);
  // Definitions change what later events resolve to.
  void Invalidate(const v1::TracePacket& packet);
  // Reserves each table's columns for the events `counting` frames (a reader of the same
  // bytes), so that they never grow: no copies, and each page is touched once.
  void Reserve(TraceReader& counting);
  // Completes the rows read since the last chunk (launch columns, string categories).
  void Finish();
  // Rows appended since the frames were last emptied.
  size_t rows() const { return rows_; }
  // Empties the frames once a chunk was taken: every column as the constructor made it.
  void Restart();

 private:
  // One step of appending a row: a column spec resolved.
  struct Op {
    Derive derive;
    int field;           // its field's number (kLaunch: in LaunchConfig)
    int other;           // kEnd: duration_ns; an NVTX end thread: the start thread; else -1
    ColumnData* column;  // its (first) column
  };
  struct Table {
    MessageFields fields;
    std::vector<Op> ops;
    // Kernels: each row's launch configuration as a slot of launch_values_; its columns
    // (launch_ops) are filled from the slots at Finish, one column at a time.
    int launch_config_id = -1;
    std::vector<Op> launch_ops;
    std::vector<uint32_t> launch_slots;
    FrameColumns* frame;
    std::vector<bool> stored_at_start;  // per column of `frame`: ColumnData::stored when made
  };
  void Append(Table& t, const FieldValues& v, bool check);
  const StringInForce& StringCode(uint64_t id);
  const ThreadInForce& Thread(uint64_t id);
  const LaunchInForce& Launch(uint64_t id);
  int32_t AddToDictionary(std::string_view s) {
    dictionary_.push_back(s);
    return static_cast<int32_t>(dictionary_.size() - 1);
  }

  TraceReader& reader_;
  TraceColumns& out_;
  std::vector<Table> tables_;
  std::array<Table*, 64> by_packet_field_{};
  MessageFields launch_fields_;
  std::vector<std::string_view> dictionary_;  // string codes of every kString column
  IdCache<StringInForce> string_codes_;
  IdCache<ThreadInForce> threads_;
  IdCache<LaunchInForce> launches_;
  LaunchInForce no_launch_{};
  std::vector<FieldValues> launch_values_{FieldValues{}};  // slot 0: none (all 0)
  size_t rows_ = 0;
};

EventDecoder::EventDecoder(TraceReader& reader, TraceColumns& out)
    : reader_(reader), out_(out), launch_fields_(v1::LaunchConfig::descriptor()) {
  const Descriptor* packet = v1::TracePacket::descriptor();
  out_.frames.reserve(EventTables().size());
  tables_.reserve(EventTables().size());
  for (const TableSpec& spec : EventTables()) {
    const Descriptor* type = packet->FindFieldByNumber(spec.packet_field)->message_type();
    FrameColumns& frame = out_.frames.emplace_back();
    frame.name = spec.frame;
    Table& t = tables_.emplace_back(Table{MessageFields(type), {}, -1, {}, {}, &frame, {}});
    std::vector<size_t> first;
    for (const ColumnSpec& c : spec.columns) {
      first.push_back(frame.columns.size());
      auto add = [&](const char* name, ColumnData::Type type) {
        ColumnData& column = frame.columns.emplace_back();
        column.name = name;
        column.type = type;
        column.enum_name = c.derive == Derive::kEnum ? c.aux : nullptr;
        // Written row by row from the start: ends, threads and strings.
        column.stored =
            c.derive == Derive::kEnd || c.derive == Derive::kThread || c.derive == Derive::kString;
      };
      switch (c.derive) {
        case Derive::kBool:
          add(c.column, ColumnData::Type::kBool);
          break;
        case Derive::kEnum:
          add(c.column, ColumnData::Type::kEnum);
          break;
        case Derive::kString:
          add(c.column, ColumnData::Type::kString);
          break;
        case Derive::kThread:
          add(c.column, ColumnData::Type::kInt64);
          add(c.aux, ColumnData::Type::kInt64);
          add(c.aux2, ColumnData::Type::kString);
          break;
        default:
          add(c.column, ColumnData::Type::kInt64);
      }
    }
    // The columns are all there: their addresses stay.
    for (size_t i = 0; i < spec.columns.size(); ++i) {
      const ColumnSpec& c = spec.columns[i];
      const MessageFields& fields = c.derive == Derive::kLaunch ? launch_fields_ : t.fields;
      int other = -1;
      if (c.derive == Derive::kEnd) other = t.fields.Number("duration_ns");
      if (std::string_view(c.field) == "end_thread_id") other = t.fields.Number("thread_id");
      (c.derive == Derive::kLaunch ? t.launch_ops : t.ops)
          .push_back({c.derive, fields.Number(c.field), other, &frame.columns[first[i]]});
    }
    t.launch_config_id = t.fields.Number("launch_config_id");
    for (const ColumnData& c : frame.columns) t.stored_at_start.push_back(c.stored);
    by_packet_field_[spec.packet_field] = &t;
  }
}

bool EventDecoder::TryDecode(std::string_view payload) {
  // One length-delimited member that spans the packet.
  const uint8_t* p = reinterpret_cast<const uint8_t*>(payload.data());
  const uint8_t* end = p + payload.size();
  uint64_t tag = 0, length = 0;
  if (!ParseVarint(&p, end, &tag) || (tag & 7) != 2 || (tag >> 3) >= by_packet_field_.size()) {
    return false;
  }
  Table* t = by_packet_field_[tag >> 3];
  if (t == nullptr || !ParseVarint(&p, end, &length) || length != static_cast<uint64_t>(end - p)) {
    return false;
  }
  FieldValues values;
  if (!t->fields.Decode(std::string_view(reinterpret_cast<const char*>(p), length), &values)) {
    return false;
  }
  Append(*t, values, /*check=*/true);
  return true;
}

void EventDecoder::AddParsed(const v1::TracePacket& packet) {
  const int member = static_cast<int>(packet.data_case());
  if (member <= 0 || member >= static_cast<int>(by_packet_field_.size())) return;
  Table* t = by_packet_field_[member];
  if (t == nullptr) return;
  const google::protobuf::Reflection* r = packet.GetReflection();
  FieldValues values;
  t->fields.FromMessage(
      r->GetMessage(packet, v1::TracePacket::descriptor()->FindFieldByNumber(member)), &values);
  Append(*t, values, /*check=*/false);
}

void EventDecoder::Invalidate(const v1::TracePacket& packet) {
  switch (packet.data_case()) {
    case v1::TracePacket::kInternedString:
      string_codes_.Erase(packet.interned_string().id());
      break;
    case v1::TracePacket::kThread:
      threads_.Erase(packet.thread().id());
      break;
    case v1::TracePacket::kLaunchConfig:
      launches_.Erase(packet.launch_config().id());
      break;
    default:
      break;
  }
}

void EventDecoder::Reserve(TraceReader& counting) {
  std::array<size_t, std::tuple_size_v<decltype(by_packet_field_)>> rows{};
  std::string_view payload;
  // Stops at the end or at an error (Decode reports it); the tag is the packet's member.
  while (counting.NextPayload(&payload).value_or(false)) {
    const uint8_t tag = payload.empty() ? 0 : static_cast<uint8_t>(payload[0]);
    if ((tag & 7) == 2 && (tag >> 3) < rows.size()) ++rows[tag >> 3];
  }
  for (size_t member = 0; member < rows.size(); ++member) {
    if (by_packet_field_[member] == nullptr) continue;
    by_packet_field_[member]->launch_slots.reserve(rows[member]);
    for (ColumnData& c : by_packet_field_[member]->frame->columns) {
      switch (c.type) {
        case ColumnData::Type::kInt64:
          c.ints.reserve(rows[member]);
          break;
        case ColumnData::Type::kBool:
          c.bools.reserve(rows[member]);
          break;
        default:
          c.codes.reserve(rows[member]);
      }
    }
  }
}

// Appends `value` to a column, or counts it while the column is all zeros (ColumnData::zeros).
template <typename T, typename Values>
inline void AppendOrCountZero(ColumnData& c, Values& values, uint64_t value) {
  if (!c.stored) {
    if (value == 0) {
      ++c.zeros;
      return;
    }
    c.Store();
  }
  values.push_back(static_cast<T>(value));
}

// One row. `check`: count references to ids not defined yet, as TraceReader::Record does for
// the packets it parses (kernels: names and launch configuration; threads, and an NVTX
// range's end thread where it differs from its start thread; call stacks).
void EventDecoder::Append(Table& t, const FieldValues& v, bool check) {
  if (t.launch_config_id >= 0) {
    const LaunchInForce& launch = Launch(v[t.launch_config_id]);
    if (check && !launch.defined) reader_.CheckLaunchConfig(v[t.launch_config_id]);
    t.launch_slots.push_back(launch.slot);
  }
  for (const Op& op : t.ops) {
    ColumnData& c = *op.column;
    const uint64_t value = v[op.field];
    switch (op.derive) {
      case Derive::kStack:
        if (check) reader_.CheckCallStack(value);
        [[fallthrough]];
      case Derive::kInt:
        AppendOrCountZero<int64_t>(c, c.ints, value);
        break;
      case Derive::kSint:
        AppendOrCountZero<int64_t>(c, c.ints, static_cast<uint64_t>(ZigZagDecode(value)));
        break;
      case Derive::kEnd:
        c.ints.push_back(static_cast<int64_t>(value + v[op.other]));
        break;
      case Derive::kBool:
        AppendOrCountZero<uint8_t>(c, c.bools, value);
        break;
      case Derive::kEnum:
        AppendOrCountZero<int32_t>(c, c.codes, value);
        break;
      case Derive::kString: {
        const StringInForce* string = string_codes_.Find(value);
        if (string == nullptr || !string->defined) {
          if (check) reader_.CheckString(value);
          string = &StringCode(value);
        }
        c.codes.push_back(string->code);
        break;
      }
      case Derive::kThread: {
        const ThreadInForce& thread = Thread(value);
        if (check && !thread.defined && (op.other < 0 || value != v[op.other])) {
          reader_.CheckThread(value);
        }
        c.ints.push_back(static_cast<int64_t>(value));
        (&c)[1].ints.push_back(thread.os_tid);
        (&c)[2].codes.push_back(thread.name);
        break;
      }
      case Derive::kLaunch:
        break;  // at Finish
    }
  }
  ++t.frame->rows;
  ++rows_;
}

const StringInForce& EventDecoder::StringCode(uint64_t id) {
  if (const StringInForce* string = string_codes_.Find(id)) return *string;
  // "" for 0, the value in force, or "<unknown:ID>" (named so by CheckString).
  const InternedStrings& strings = reader_.strings();
  return string_codes_.Set(id,
                           {AddToDictionary(strings.Get(id)), id == 0 || strings.IsDefined(id)});
}

const ThreadInForce& EventDecoder::Thread(uint64_t id) {
  if (const ThreadInForce* t = threads_.Find(id)) return *t;
  ThreadInForce t;
  if (const v1::ThreadInfo* info = reader_.FindThread(id)) {
    t.os_tid = info->os_tid();
    t.name = AddToDictionary(out_.owned->emplace_back(info->name()));
    t.defined = true;
  } else {
    t.name =
        AddToDictionary(id == 0 ? std::string_view()
                                : out_.owned->emplace_back(absl::StrCat("<unknown:", id, ">")));
  }
  return threads_.Set(id, t);
}

const LaunchInForce& EventDecoder::Launch(uint64_t id) {
  if (id == 0) return no_launch_;  // as TraceModel: id 0 names no launch configuration
  if (const LaunchInForce* l = launches_.Find(id)) return *l;
  LaunchInForce l;
  if (const v1::LaunchConfig* config = reader_.FindLaunchConfig(id)) {
    l.slot = static_cast<uint32_t>(launch_values_.size());
    launch_fields_.FromMessage(*config, &launch_values_.emplace_back());
    l.defined = true;
  }
  return launches_.Set(id, l);
}

// Fills the launch configuration columns; string codes become codes into each column's
// sorted distinct values.
void EventDecoder::Finish() {
  for (Table& t : tables_) {
    for (const Op& op : t.launch_ops) {
      const bool all_zero = std::all_of(launch_values_.begin(), launch_values_.end(),
                                        [&](const FieldValues& v) { return v[op.field] == 0; });
      if (all_zero) {
        op.column->zeros = t.launch_slots.size();
        continue;
      }
      op.column->Store();
      for (uint32_t slot : t.launch_slots) {
        op.column->ints.push_back(static_cast<int64_t>(launch_values_[slot][op.field]));
      }
    }
    t.launch_slots = {};
  }
  std::vector<int32_t> rank(dictionary_.size(), -1);
  std::vector<int32_t> used;
  for (FrameColumns& frame : out_.frames) {
    for (ColumnData& c : frame.columns) {
      if (c.type != ColumnData::Type::kString) continue;
      used.clear();
      for (int32_t code : c.codes) {
        if (rank[code] < 0) {
          rank[code] = 0;
          used.push_back(code);
        }
      }
      std::sort(used.begin(), used.end(),
                [&](int32_t a, int32_t b) { return dictionary_[a] < dictionary_[b]; });
      for (int32_t code : used) {
        if (c.categories.empty() || c.categories.back() != dictionary_[code]) {
          c.categories.push_back(dictionary_[code]);
        }
        rank[code] = static_cast<int32_t>(c.categories.size() - 1);
      }
      for (int32_t& code : c.codes) code = rank[code];
      for (int32_t code : used) rank[code] = -1;
    }
  }
}

void EventDecoder::Restart() {
  for (Table& t : tables_) {
    t.frame->rows = 0;
    for (size_t i = 0; i < t.frame->columns.size(); ++i) {
      ColumnData& c = t.frame->columns[i];
      c.ints = {};
      c.bools = {};
      c.codes = {};
      c.categories = {};
      c.zeros = 0;
      c.stored = t.stored_at_start[i];
    }
  }
  rows_ = 0;
}

}  // namespace columns_internal

absl::StatusOr<TraceColumns> TraceColumns::Decode(const std::string& path) {
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::Open(path);
  if (!reader.ok()) return reader.status();
  absl::StatusOr<std::unique_ptr<TraceReader>> counting = TraceReader::Open(path);
  return Decode(**reader, counting.ok() ? counting->get() : nullptr);
}

absl::StatusOr<TraceColumns> TraceColumns::Decode(TraceReader& reader, TraceReader* counting) {
  return DecodeFrom(reader, counting, 0, nullptr);
}

absl::StatusOr<TraceColumns> TraceColumns::DecodeInChunks(const std::string& path,
                                                          size_t chunk_rows,
                                                          const ChunkSink& take) {
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::Open(path);
  if (!reader.ok()) return reader.status();
  return DecodeFrom(**reader, nullptr, std::max<size_t>(chunk_rows, 1), &take);
}

absl::StatusOr<TraceColumns> TraceColumns::DecodeFrom(TraceReader& reader, TraceReader* counting,
                                                      size_t chunk_rows, const ChunkSink* take) {
  TraceColumns out;
  out.strings = reader.shared_strings();
  columns_internal::EventDecoder events(reader, out);
  if (counting != nullptr) events.Reserve(*counting);
  columns_internal::SampleDecoder samples(reader, out);
  // Hands the rows read so far to `take` and starts the frames again. Before the end, the
  // last PC batch waits for the next chunk: continuation packets may still add records to it.
  auto emit = [&](bool at_end) -> absl::Status {
    events.Finish();
    std::vector<PcSampleBatch>& batches = out.samples.pc_sample_batches;
    std::optional<PcSampleBatch> open;
    if (!at_end && !batches.empty()) {
      open = std::move(batches.back());
      batches.pop_back();
    }
    if (!(*take)(out.frames, out.samples)) {
      return absl::CancelledError("warpscope: reading stopped");
    }
    events.Restart();
    out.samples.pm_samples = {};
    batches = {};
    if (open.has_value()) batches.push_back(std::move(*open));
    return absl::OkStatus();
  };
  while (true) {
    std::string_view payload;
    absl::StatusOr<bool> framed = reader.NextPayload(&payload);
    if (!framed.ok()) return framed.status();
    if (!*framed) break;
    if (events.TryDecode(payload)) {
      reader.CountDecoded();
    } else {
      absl::StatusOr<const v1::TracePacket*> packet = reader.ParsePayload(payload);
      if (!packet.ok()) return packet.status();
      if (columns_internal::IsEventPacket(**packet)) {
        events.AddParsed(**packet);
      } else {
        events.Invalidate(**packet);
        samples.Add(**packet);
      }
    }
    if (take != nullptr && events.rows() + out.samples.pm_samples.size() >= chunk_rows) {
      if (absl::Status s = emit(/*at_end=*/false); !s.ok()) return s;
    }
  }
  if (take != nullptr &&
      events.rows() + out.samples.pm_samples.size() + out.samples.pc_sample_batches.size() > 0) {
    if (absl::Status s = emit(/*at_end=*/true); !s.ok()) return s;
  }
  events.Finish();
  samples.Finish();
  return out;
}

}  // namespace warpscope
