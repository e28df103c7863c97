// Pairs NVTX marker records into ranges (see nvtx_range_builder.h).
#include "collectors/nvtx/nvtx_range_builder.h"

#include <algorithm>

namespace warpscope {

void NvtxRangeBuilder::OnMarker(const MarkerEvent& e, RecordSink& sink) {
  switch (e.kind) {
    case MarkerEvent::Kind::kStart: {
      Open o;
      o.name = e.name ? e.name : "";
      o.domain = e.domain ? e.domain : "";
      o.start_ns = e.timestamp_ns;
      o.os_tid = e.os_tid;
      std::vector<uint32_t>& stack = stacks_[e.os_tid];
      o.depth = static_cast<uint32_t>(stack.size());
      stack.push_back(e.id);
      open_[e.id] = std::move(o);
      return;
    }
    case MarkerEvent::Kind::kEnd: {
      auto it = open_.find(e.id);
      if (it == open_.end()) {
        ++unmatched_ends_;
        return;
      }
      Open o = std::move(it->second);
      open_.erase(it);
      bool push_pop = false;
      auto stack_it = stacks_.find(o.os_tid);
      if (stack_it != stacks_.end()) {
        std::vector<uint32_t>& stack = stack_it->second;
        push_pop = e.os_tid == o.os_tid && !stack.empty() && stack.back() == e.id;
        auto pos = std::find(stack.rbegin(), stack.rend(), e.id);
        if (pos != stack.rend()) stack.erase(std::next(pos).base());
        if (stack.empty()) stacks_.erase(stack_it);
      }
      if (Suppressed(o)) return;
      NvtxRangeRecord r;
      r.name_id = sink.InternString(o.name);
      r.domain_id = o.domain.empty() ? 0 : sink.InternString(o.domain);
      r.category = o.category;
      r.color = o.color;
      r.start_ns = o.start_ns;
      r.end_ns = e.timestamp_ns;
      r.thread_id = sink.InternThread(o.os_tid, o.os_tid);
      r.end_thread_id = e.os_tid == o.os_tid ? r.thread_id : sink.InternThread(e.os_tid, e.os_tid);
      r.is_push_pop = push_pop;
      r.depth = push_pop ? o.depth : 0;
      sink.Write(r);
      return;
    }
    case MarkerEvent::Kind::kInstant: {
      NvtxMarkRecord m;
      m.name_id = sink.InternString(e.name ? e.name : "");
      m.domain_id = e.domain && e.domain[0] ? sink.InternString(e.domain) : 0;
      m.timestamp_ns = e.timestamp_ns;
      m.thread_id = sink.InternThread(e.os_tid, e.os_tid);
      auto d = data_for_instant_.find(e.id);
      if (d != data_for_instant_.end()) {
        m.color = d->second.color;
        m.category = d->second.category;
        data_for_instant_.erase(d);
      }
      sink.Write(m);
      return;
    }
  }
}

void NvtxRangeBuilder::OnMarkerData(uint32_t id, uint32_t color, uint32_t category,
                                    RecordSink& /*sink*/) {
  auto it = open_.find(id);
  if (it != open_.end()) {
    it->second.color = color;
    it->second.category = category;
    return;
  }
  // Instant marks: CUPTI writes the MARKER record before MARKER_DATA, so the mark is already
  // written; keep the data only if its mark has not arrived (bounded).
  if (data_for_instant_.size() < 4096 && (color || category)) data_for_instant_[id] = {color, category};
}

}  // namespace warpscope
