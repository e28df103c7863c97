// ws_trace_check's reading side: the packets of a trace and the facts its checks look at.
#include "tests/gpu/trace_facts.h"

#include <google/protobuf/io/coded_stream.h>

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace ws_trace_check {
namespace {

const char* CopyKindName(int k) {
  static const char* names[] = {"unknown", "htod", "dtoh", "htoa", "atoh", "atoa",
                                "atod",    "dtoa", "dtod", "htoh", "ptop"};
  return k >= 0 && k <= 10 ? names[k] : "?";
}

}  // namespace

bool Load(const std::string& path, Loaded* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  google::protobuf::io::CodedInputStream cis(reinterpret_cast<const uint8_t*>(data.data()),
                                             static_cast<int>(data.size()));
  cis.SetTotalBytesLimit(INT32_MAX);
  while (true) {
    uint32_t tag = cis.ReadTag();
    if (tag == 0) break;
    uint32_t len = 0;
    if (tag != 0x0A || !cis.ReadVarint32(&len)) {
      out->partial = true;
      break;
    }
    std::string bytes;
    if (!cis.ReadString(&bytes, static_cast<int>(len))) {
      out->partial = true;
      break;
    }
    pb::TracePacket p;
    if (!p.ParseFromString(bytes)) {
      out->partial = true;
      break;
    }
    if (p.has_interned_string()) out->strings[p.interned_string().id()] = p.interned_string().value();
    if (p.has_thread()) out->thread_os[p.thread().id()] = p.thread().os_tid();
    out->packets.push_back(std::move(p));
  }
  return true;
}

void TraceFacts::Add(const pb::TracePacket& p) {
  if (p.has_header()) header = true;
  if (p.has_device()) ++devices;
  if (p.has_context()) {
    ++contexts;
    context_devices[p.context().id()] = p.context().device_id();
  }
  if (p.has_graph_launch()) graph_launch_ids.push_back(p.graph_launch().graph_id());
  if (p.has_kernel()) {
    std::string name = str(p.kernel().name_id());
    ++kernels[name];
    kernel_starts.emplace_back(p.kernel().start_ns(), name);
    if (name.find("ws_spin") != std::string::npos) spin_durations.push_back(p.kernel().duration_ns());
    kernel_info.push_back({name, p.kernel().start_ns(), p.kernel().start_ns() + p.kernel().duration_ns(),
                           p.kernel().device_id(), p.kernel().context_id(), p.kernel().graph_id()});
    min_ts = std::min<uint64_t>(min_ts, p.kernel().start_ns());
    max_ts = std::max<uint64_t>(max_ts, p.kernel().start_ns() + p.kernel().duration_ns());
  }
  if (p.has_api_call()) ++api_calls;
  if (p.has_synchronization()) ++syncs;
  if (p.has_nvtx_mark()) ++marks;
  if (p.has_memcpy()) {
    ++memcpys[std::string(CopyKindName(p.memcpy().copy_kind())) + ":" +
              std::to_string(p.memcpy().bytes())];
  }
  if (p.has_memset()) ++memsets[p.memset().bytes()];
  if (p.has_nvtx_range()) {
    std::string name = str(p.nvtx_range().name_id());
    ++nvtx[name];
    nvtx_depth[name] = p.nvtx_range().depth();
    nvtx_threads.insert(p.nvtx_range().thread_id());
  }
  if (p.has_capture_window()) {
    if (p.capture_window().begin()) {
      open = true;
      open_begin = p.capture_window().timestamp_ns();
    } else if (open) {
      windows.emplace_back(open_begin, p.capture_window().timestamp_ns());
      open = false;
    }
  }
  if (p.has_pm_sample()) {
    pm_samples.emplace_back(p.pm_sample().start_ns(),
                            p.pm_sample().start_ns() + p.pm_sample().duration_ns());
  }
  if (p.has_stats()) {
    for (const auto& c : p.stats().counters()) counters[c.name()] = c.value();
  }
  AddSamplesAndEnd(p);
}

void TraceFacts::AddSamplesAndEnd(const pb::TracePacket& p) {
  if (p.has_pc_samples()) {
    pc_cupti_total += p.pc_samples().total_samples();
    for (const auto& r : p.pc_samples().records()) {
      uint64_t n = 0;
      for (uint64_t v : r.samples()) n += v;
      const std::string mangled = str(r.function_name_id());
      int status = 0;
      char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
      pc_samples_by_function[status == 0 && d != nullptr ? d : mangled] += n;
      std::free(d);
      pc_samples_total += n;
      ++pc_records;
      pc_crcs.insert(r.cubin_crc());
    }
  }
  if (p.has_cubin()) {
    auto& c = cubin_bytes[p.cubin().crc()];
    if (p.cubin().offset() == c.first) c.first += p.cubin().image().size();
    c.second = p.cubin().total_bytes() != 0 ? p.cubin().total_bytes() : p.cubin().image().size();
  }
  if (p.has_end_of_trace()) {
    end = true;
    end_reason = p.end_of_trace().reason();
  }
}

void TraceFacts::Finish() {
  if (open) windows.emplace_back(open_begin, UINT64_MAX);
  drops = counters["cupti.dropped_records"] + counters["writer.events_dropped.buffer_full"];
}

void TraceFacts::Print(const char* path, bool dump) {
  std::printf("trace %s: pc_samples=%llu pc_records=%llu cupti_total_samples=%llu cubins=%zu\n",
              path, (unsigned long long)pc_samples_total, (unsigned long long)pc_records,
              (unsigned long long)pc_cupti_total, cubin_bytes.size());
  std::printf("trace %s: packets=%zu partial=%d header=%d end=%d reason=%d kernels=%zu "
              "api_calls=%ld syncs=%ld devices=%ld contexts=%ld nvtx_ranges=%zu marks=%ld "
              "windows=%zu drops=%llu graph_launches=%zu span_ms=%.3f\n",
              path, t.packets.size(), t.partial, header, end, end_reason, kernel_starts.size(),
              api_calls, syncs, devices, contexts, nvtx.size(), marks, windows.size(),
              static_cast<unsigned long long>(drops), graph_launch_ids.size(),
              max_ts > min_ts ? (max_ts - min_ts) / 1e6 : 0.0);
  if (dump) Dump();
}

void TraceFacts::Dump() {
  for (auto& [k, v] : kernels) std::printf("  kernel %-50s %ld\n", k.c_str(), v);
  for (auto& [k, v] : nvtx) std::printf("  nvtx %-30s %ld depth=%ld\n", k.c_str(), v, nvtx_depth[k]);
  for (auto& [k, v] : memcpys) std::printf("  memcpy %s x%ld\n", k.c_str(), v);
  for (auto& [k, v] : memsets) std::printf("  memset %llu x%ld\n", (unsigned long long)k, v);
  for (auto& w : windows) std::printf("  window %.3f s .. %.3f s\n", w.first / 1e9, w.second == UINT64_MAX ? -1.0 : w.second / 1e9);
  for (auto& [k, v] : counters) std::printf("  counter %s = %llu\n", k.c_str(), (unsigned long long)v);
  // Per kernel name: the (device, context) pairs and graph ids it ran with.
  std::map<std::string, std::map<std::pair<uint32_t, uint32_t>, long>> where;
  std::map<std::string, std::set<uint32_t>> graphs;
  for (const auto& k : kernel_info) {
    ++where[k.name][{k.device, k.context}];
    if (k.graph) graphs[k.name].insert(k.graph);
  }
  for (auto& [name, m] : where) {
    for (auto& [dc, c] : m) std::printf("  kernel-context %s device=%u context=%u x%ld\n", name.c_str(), dc.first, dc.second, c);
    if (graphs.count(name)) {
      std::printf("  kernel-graphs %s", name.c_str());
      for (uint32_t g : graphs[name]) std::printf(" %u", g);
      std::printf("\n");
    }
  }
  for (auto& [id, dev] : context_devices) std::printf("  context %u device=%u\n", id, dev);
  std::map<uint32_t, long> gl;
  for (uint32_t g : graph_launch_ids) ++gl[g];
  for (auto& [g, c] : gl) std::printf("  graph-launch graph=%u x%ld\n", g, c);
  for (const auto& p : t.packets) {
    if (p.has_device()) {
      std::printf("  device %u %s sm=%u warps/sm=%u smem/sm=%llu optin=%llu reserved=%llu\n",
                  p.device().id(), p.device().name().c_str(), p.device().sm_count(),
                  p.device().max_warps_per_sm(),
                  (unsigned long long)p.device().max_shared_memory_per_sm(),
                  (unsigned long long)p.device().max_shared_memory_per_block_optin(),
                  (unsigned long long)p.device().reserved_shared_memory_per_block());
    }
    if (p.has_header()) {
      std::printf("  header pid=%u clock=%d cupti=%u\n", p.header().pid(),
                  p.header().clock_domain(), p.header().cupti_version());
    }
    if (p.has_notice()) std::printf("  notice %s\n", p.notice().message().c_str());
  }
}

}  // namespace ws_trace_check
