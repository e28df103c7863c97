// TraceReader's interned tables and reference checks (see trace_reader.h): strings, launch
// configurations, threads, call stacks and their frames defined by id, and counts of ids used
// before their definition.
#include "analyzers/model/trace_reader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace warpscope {

// ---------------------------------------------------------------------------------------
// InternedStrings

std::string_view* InternedStrings::Slot(uint64_t id, bool create) {
  if (id < dense_.size()) return &dense_[id];
  auto it = sparse_.find(id);
  if (it != sparse_.end()) return &it->second;
  if (!create) return nullptr;
  // Grow the dense table only for ids near its end (the writer counts up from 1), so that
  // a corrupt id cannot make it allocate gigabytes; strays go to the map.
  if (id < kMaxDenseId && id < dense_.size() + kDenseSlack) {
    const size_t new_size =
        std::min<size_t>(kMaxDenseId, std::max<size_t>(id + 1, dense_.size() * 2));
    dense_.resize(new_size);
    dense_defined_.resize(new_size, 0);
    // Entries that were strays before the growth move into the dense table.
    for (auto stray = sparse_.begin(); stray != sparse_.end();) {
      if (stray->first < new_size) {
        dense_[stray->first] = stray->second;
        dense_defined_[stray->first] = sparse_defined_.count(stray->first) > 0 ? 1 : 0;
        sparse_defined_.erase(stray->first);
        stray = sparse_.erase(stray);
      } else {
        ++stray;
      }
    }
    return &dense_[id];
  }
  return &sparse_[id];
}

const std::string_view* InternedStrings::Slot(uint64_t id) const {
  if (id < dense_.size()) return &dense_[id];
  auto it = sparse_.find(id);
  return it == sparse_.end() ? nullptr : &it->second;
}

void InternedStrings::Define(uint64_t id, std::string_view value) {
  if (id == 0) return;
  if (!IsDefined(id)) ++num_defined_;
  storage_.emplace_back(value);
  *Slot(id, true) = storage_.back();
  if (id < dense_.size()) {
    dense_defined_[id] = 1;
  } else {
    sparse_defined_[id] = true;
  }
}

bool InternedStrings::IsDefined(uint64_t id) const {
  if (id == 0) return false;
  if (id < dense_defined_.size()) return dense_defined_[id] != 0;
  return sparse_defined_.count(id) > 0;
}

std::string_view InternedStrings::Get(uint64_t id) const {
  if (id == 0) return {};
  const std::string_view* slot = Slot(id);
  if (slot == nullptr || slot->data() == nullptr) return "<unknown>";
  return *slot;
}

bool InternedStrings::MarkUndefined(uint64_t id) {
  if (id == 0 || IsDefined(id)) return false;
  std::string_view* slot = Slot(id, true);
  if (slot->data() != nullptr) return false;  // already named <unknown:ID>
  storage_.push_back(absl::StrCat("<unknown:", id, ">"));
  *slot = storage_.back();
  return true;
}

// ---------------------------------------------------------------------------------------
// TraceReader: definitions and references

void TraceReader::CheckString(uint64_t id) {
  if (id != 0 && !strings_->IsDefined(id)) {
    ++counters_.undefined_string_refs;
    strings_->MarkUndefined(id);
  }
}

void TraceReader::CheckLaunchConfig(uint64_t id) {
  if (id != 0 && launch_configs_.find(id) == launch_configs_.end()) {
    ++counters_.undefined_launch_config_refs;
  }
}

void TraceReader::CheckThread(uint64_t id) {
  if (id != 0 && threads_.find(id) == threads_.end()) ++counters_.undefined_thread_refs;
}

void TraceReader::CheckCallStack(uint64_t id) {
  if (id != 0 && call_stacks_.find(id) == call_stacks_.end()) ++counters_.undefined_stack_refs;
}

const v1::LaunchConfig* TraceReader::FindLaunchConfig(uint64_t id) const {
  auto it = launch_configs_.find(id);
  return it == launch_configs_.end() ? nullptr : &it->second;
}

const v1::ThreadInfo* TraceReader::FindThread(uint64_t id) const {
  auto it = threads_.find(id);
  return it == threads_.end() ? nullptr : &it->second;
}

void TraceReader::Record(const v1::TracePacket& p) {
  if (truncation_.saw_end_of_trace) ++truncation_.packets_after_end;
  // Only the packet level is checked: a deep walk would cost more than parsing.
  if (p.data_case() != v1::TracePacket::DATA_NOT_SET &&
      !p.GetReflection()->GetUnknownFields(p).empty()) {
    ++counters_.packets_with_unknown_fields;
  }
  switch (p.data_case()) {
    case v1::TracePacket::kHeader:
      ++counters_.extra_headers;
      break;
    case v1::TracePacket::kInternedString:
    case v1::TracePacket::kLaunchConfig:
    case v1::TracePacket::kThread:
    case v1::TracePacket::kStackFrame:
    case v1::TracePacket::kCallStack:
      RecordDefinition(p);
      break;
    case v1::TracePacket::kEndOfTrace:
      truncation_.saw_end_of_trace = true;
      break;
    case v1::TracePacket::DATA_NOT_SET:
      ++counters_.unknown_packets;
      break;
    default:
      CheckReferences(p);
      break;
  }
}

// Keeps `definition` under its id; one that changes an id's value is counted (the last wins).
template <typename Definition>
void TraceReader::KeepDefinition(const Definition& definition,
                                 std::map<uint64_t, Definition>& table) {
  auto [it, inserted] = table.try_emplace(definition.id(), definition);
  if (inserted) return;
  if (it->second.SerializeAsString() != definition.SerializeAsString()) {
    ++counters_.redefined_ids;
  }
  it->second = definition;
}

// Keeps an interned definition; one that changes an id's value is counted (the last wins).
void TraceReader::RecordDefinition(const v1::TracePacket& p) {
  switch (p.data_case()) {
    case v1::TracePacket::kInternedString:
      // The writer may emit a string again under the same id (its intern table was full);
      // only a different value is a problem.
      if (strings_->IsDefined(p.interned_string().id())) {
        if (strings_->Get(p.interned_string().id()) != p.interned_string().value()) {
          ++counters_.redefined_ids;
          strings_->Define(p.interned_string().id(), p.interned_string().value());
        }
      } else {
        strings_->Define(p.interned_string().id(), p.interned_string().value());
      }
      break;
    case v1::TracePacket::kLaunchConfig: {
      auto [it, inserted] = launch_configs_.try_emplace(p.launch_config().id());
      if (!inserted && it->second.SerializeAsString() != p.launch_config().SerializeAsString()) {
        ++counters_.redefined_ids;
      }
      it->second = p.launch_config();
      break;
    }
    case v1::TracePacket::kThread: {
      auto [it, inserted] = threads_.try_emplace(p.thread().id());
      if (!inserted && it->second.SerializeAsString() != p.thread().SerializeAsString()) {
        ++counters_.redefined_ids;
      }
      it->second = p.thread();
      break;
    }
    case v1::TracePacket::kStackFrame:
      CheckString(p.stack_frame().file_id());
      CheckString(p.stack_frame().function_id());
      KeepDefinition(p.stack_frame(), stack_frames_);
      break;
    case v1::TracePacket::kCallStack:
      // The writer defines every frame before the first stack that uses it.
      for (uint64_t frame : p.call_stack().frame_ids()) {
        if (frame == 0 || stack_frames_.find(frame) == stack_frames_.end()) {
          ++counters_.undefined_stack_frame_refs;
        }
      }
      KeepDefinition(p.call_stack(), call_stacks_);
      break;
    default:
      break;
  }
}

// Counts references to ids not defined before the packet that uses them.
void TraceReader::CheckReferences(const v1::TracePacket& p) {
  switch (p.data_case()) {
    case v1::TracePacket::kKernel:
      CheckString(p.kernel().name_id());
      CheckString(p.kernel().mangled_name_id());
      CheckLaunchConfig(p.kernel().launch_config_id());
      break;
    case v1::TracePacket::kSynchronization:
      CheckThread(p.synchronization().thread_id());
      break;
    case v1::TracePacket::kApiCall:
      CheckString(p.api_call().name_id());
      CheckThread(p.api_call().thread_id());
      break;
    case v1::TracePacket::kOverhead:
      CheckString(p.overhead().kind_id());
      CheckThread(p.overhead().thread_id());
      break;
    case v1::TracePacket::kNvtxRange:
      CheckString(p.nvtx_range().name_id());
      CheckString(p.nvtx_range().domain_id());
      CheckThread(p.nvtx_range().thread_id());
      if (p.nvtx_range().end_thread_id() != p.nvtx_range().thread_id()) {
        CheckThread(p.nvtx_range().end_thread_id());
      }
      break;
    case v1::TracePacket::kApiStack:
      CheckString(p.api_stack().name_id());
      CheckCallStack(p.api_stack().stack_id());
      break;
    case v1::TracePacket::kMemory:
      CheckString(p.memory().source_id());
      CheckThread(p.memory().thread_id());
      break;
    case v1::TracePacket::kNcclCall:
      CheckString(p.nccl_call().name_id());
      CheckThread(p.nccl_call().thread_id());
      break;
    case v1::TracePacket::kNvtxMark:
      CheckString(p.nvtx_mark().name_id());
      CheckString(p.nvtx_mark().domain_id());
      CheckThread(p.nvtx_mark().thread_id());
      break;
    case v1::TracePacket::kPcSamples:
      for (const v1::PcSampleRecord& record : p.pc_samples().records()) {
        CheckString(record.function_name_id());
      }
      break;
    default:
      break;
  }
}

}  // namespace warpscope
