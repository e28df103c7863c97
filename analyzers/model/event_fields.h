// The common event messages read from their decoded varints (wire_fields::FieldValues) with
// the accessors of the generated classes, so that TraceModelBuilder fills its tables with one
// code path from either: `AddKernel(packet.kernel())` after protobuf parsed the packet, or
// `AddKernel(KernelFields{values})` after the fast decoder read its bytes. Field numbers are
// the generated k...FieldNumber constants.
#ifndef WARPSCOPE_ANALYZERS_MODEL_EVENT_FIELDS_H_
#define WARPSCOPE_ANALYZERS_MODEL_EVENT_FIELDS_H_

#include <cstdint>

#include "analyzers/model/wire_fields.h"
#include "warpscope/v1/trace.pb.h"

namespace warpscope::event_fields {

using wire_fields::FieldValues;

// The fields every piece of GPU work has (StreamWork).
template <typename Message>
struct StreamWorkFields {
  const FieldValues& v;
  uint64_t start_ns() const { return v[Message::kStartNsFieldNumber]; }
  uint64_t duration_ns() const { return v[Message::kDurationNsFieldNumber]; }
  uint32_t device_id() const { return static_cast<uint32_t>(v[Message::kDeviceIdFieldNumber]); }
  uint32_t context_id() const { return static_cast<uint32_t>(v[Message::kContextIdFieldNumber]); }
  uint32_t stream_id() const { return static_cast<uint32_t>(v[Message::kStreamIdFieldNumber]); }
  uint32_t correlation_id() const {
    return static_cast<uint32_t>(v[Message::kCorrelationIdFieldNumber]);
  }
};

struct KernelFields : StreamWorkFields<v1::KernelEvent> {
  using M = v1::KernelEvent;
  uint64_t name_id() const { return v[M::kNameIdFieldNumber]; }
  uint64_t mangled_name_id() const { return v[M::kMangledNameIdFieldNumber]; }
  uint64_t launch_config_id() const { return v[M::kLaunchConfigIdFieldNumber]; }
  uint32_t graph_id() const { return static_cast<uint32_t>(v[M::kGraphIdFieldNumber]); }
  uint32_t graph_node_id() const { return static_cast<uint32_t>(v[M::kGraphNodeIdFieldNumber]); }
  uint64_t grid_id() const { return v[M::kGridIdFieldNumber]; }
};

struct MemcpyFields : StreamWorkFields<v1::MemcpyEvent> {
  using M = v1::MemcpyEvent;
  v1::CopyKind copy_kind() const { return static_cast<v1::CopyKind>(v[M::kCopyKindFieldNumber]); }
  v1::MemoryKind src_kind() const {
    return static_cast<v1::MemoryKind>(v[M::kSrcKindFieldNumber]);
  }
  v1::MemoryKind dst_kind() const {
    return static_cast<v1::MemoryKind>(v[M::kDstKindFieldNumber]);
  }
  uint64_t bytes() const { return v[M::kBytesFieldNumber]; }
  bool is_async() const { return v[M::kIsAsyncFieldNumber] != 0; }
  uint32_t src_device_id() const { return static_cast<uint32_t>(v[M::kSrcDeviceIdFieldNumber]); }
  uint32_t dst_device_id() const { return static_cast<uint32_t>(v[M::kDstDeviceIdFieldNumber]); }
  uint32_t graph_node_id() const { return static_cast<uint32_t>(v[M::kGraphNodeIdFieldNumber]); }
};

struct MemsetFields : StreamWorkFields<v1::MemsetEvent> {
  using M = v1::MemsetEvent;
  uint32_t value() const { return static_cast<uint32_t>(v[M::kValueFieldNumber]); }
  uint64_t bytes() const { return v[M::kBytesFieldNumber]; }
  v1::MemoryKind memory_kind() const {
    return static_cast<v1::MemoryKind>(v[M::kMemoryKindFieldNumber]);
  }
  bool is_async() const { return v[M::kIsAsyncFieldNumber] != 0; }
};

struct SyncFields {
  using M = v1::SyncEvent;
  const FieldValues& v;
  v1::SyncKind kind() const { return static_cast<v1::SyncKind>(v[M::kKindFieldNumber]); }
  uint64_t start_ns() const { return v[M::kStartNsFieldNumber]; }
  uint64_t duration_ns() const { return v[M::kDurationNsFieldNumber]; }
  uint32_t context_id() const { return static_cast<uint32_t>(v[M::kContextIdFieldNumber]); }
  uint32_t stream_id() const { return static_cast<uint32_t>(v[M::kStreamIdFieldNumber]); }
  uint32_t cuda_event_id() const { return static_cast<uint32_t>(v[M::kCudaEventIdFieldNumber]); }
  uint32_t correlation_id() const {
    return static_cast<uint32_t>(v[M::kCorrelationIdFieldNumber]);
  }
  uint64_t thread_id() const { return v[M::kThreadIdFieldNumber]; }
};

struct ApiCallFields {
  using M = v1::ApiCallEvent;
  const FieldValues& v;
  v1::ApiDomain domain() const { return static_cast<v1::ApiDomain>(v[M::kDomainFieldNumber]); }
  uint64_t name_id() const { return v[M::kNameIdFieldNumber]; }
  uint64_t start_ns() const { return v[M::kStartNsFieldNumber]; }
  uint64_t duration_ns() const { return v[M::kDurationNsFieldNumber]; }
  uint64_t thread_id() const { return v[M::kThreadIdFieldNumber]; }
  uint32_t correlation_id() const {
    return static_cast<uint32_t>(v[M::kCorrelationIdFieldNumber]);
  }
  uint32_t result() const { return static_cast<uint32_t>(v[M::kResultFieldNumber]); }
  uint32_t callback_id() const { return static_cast<uint32_t>(v[M::kCallbackIdFieldNumber]); }
};

struct NvtxRangeFields {
  using M = v1::NvtxRangeEvent;
  const FieldValues& v;
  uint64_t name_id() const { return v[M::kNameIdFieldNumber]; }
  uint64_t domain_id() const { return v[M::kDomainIdFieldNumber]; }
  uint32_t category() const { return static_cast<uint32_t>(v[M::kCategoryFieldNumber]); }
  uint32_t color() const { return static_cast<uint32_t>(v[M::kColorFieldNumber]); }
  uint64_t start_ns() const { return v[M::kStartNsFieldNumber]; }
  uint64_t duration_ns() const { return v[M::kDurationNsFieldNumber]; }
  uint64_t thread_id() const { return v[M::kThreadIdFieldNumber]; }
  uint64_t end_thread_id() const { return v[M::kEndThreadIdFieldNumber]; }
  bool is_push_pop() const { return v[M::kIsPushPopFieldNumber] != 0; }
  uint32_t depth() const { return static_cast<uint32_t>(v[M::kDepthFieldNumber]); }
};

}  // namespace warpscope::event_fields

#endif  // WARPSCOPE_ANALYZERS_MODEL_EVENT_FIELDS_H_
