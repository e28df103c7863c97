// ws_trace_check: reads a .wst trace packet by packet (also one cut short) and checks
// expectations given on the command line; exits 1 with one line per failed check.
// Used by tests/gpu/gpu_suite.sh on the GPU machine.
//
//   ws_trace_check FILE [--dump] [--complete|--truncated-ok] [--kernels NAME=N]
//     [--kernels-min NAME=N] [--kernels-max NAME=N] [--no-kernel NAME] [--nvtx NAME=N]
//     [--nvtx-depth NAME=D] [--nvtx-threads N] [--windows N] [--drops 0]
//     [--kernels-in-windows] [--memcpy KIND:BYTES] [--memset BYTES] [--event-times FILE]
//     [--end-reason exit|signal|crash] [--counter-min NAME=N] [--first-kernel-sampled NAME]
//     [--devices-min N] [--window-near BEGIN_S:END_S:TOL_S]
//     [--window-length SECONDS:TOL_S] [--distinct-contexts NAME1,NAME2,...]
//     [--distinct-devices NAME1,NAME2,...] [--graph-launches N] [--in-graph NAME]
//     [--not-in-graph NAME] [--straddles NAME=MIN_MS] [--pc-kernels-min-ms MS]
//     [--cubins-cover-pcs]
//   --pc-kernels-min-ms MS: every kernel with a launch of at least MS ms has PC samples
//     (PC records name functions mangled; they are demangled to match kernel names).
//   --cubins-cover-pcs: every cubin CRC in the PC records has a whole CubinImage.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/gpu/trace_facts.h"

namespace ws_trace_check {
namespace {

int g_failures = 0;
void Fail(const std::string& what) {
  std::fprintf(stderr, "CHECK FAILED: %s\n", what.c_str());
  ++g_failures;
}

std::pair<std::string, long> KeyVal(const std::string& s) {
  size_t eq = s.rfind('=');
  if (eq == std::string::npos) return {s, 0};
  return {s.substr(0, eq), std::atol(s.c_str() + eq + 1)};
}

}  // namespace

// Completeness, kernel, NVTX, window, drop, copy and memset counts.
bool TraceFacts::CheckContents(const std::string& a, const Take& take) {
  if (a == "--complete") {
    if (!end) Fail("no EndOfTrace packet (trace not complete)");
    if (t.partial) Fail("file ends inside a packet");
  } else if (a == "--truncated-ok") {
    if (!header) Fail("no header");
  } else if (a == "--kernels" || a == "--kernels-min" || a == "--kernels-max") {
    auto [name, n] = KeyVal(take());
    long got = 0;
    for (auto& [k, c] : kernels) if (k.find(name) != std::string::npos) got += c;
    bool ok = a == "--kernels" ? got == n : a == "--kernels-min" ? got >= n : got <= n;
    if (!ok) Fail(a + " " + name + ": expected " + std::to_string(n) + ", got " + std::to_string(got));
  } else if (a == "--no-kernel") {
    std::string name = take();
    for (auto& [k, c] : kernels) {
      if (k.find(name) != std::string::npos) Fail("kernel " + k + " present " + std::to_string(c) + "x");
    }
  } else if (a == "--nvtx") {
    auto [name, n] = KeyVal(take());
    if (nvtx[name] != n) Fail("nvtx " + name + ": expected " + std::to_string(n) + ", got " + std::to_string(nvtx[name]));
  } else if (a == "--no-nvtx") {
    std::string name = take();
    if (nvtx.count(name) && nvtx[name] > 0) Fail("nvtx range " + name + " present");
  } else if (a == "--nvtx-depth") {
    auto [name, d] = KeyVal(take());
    if (!nvtx.count(name) || nvtx_depth[name] != d) Fail("nvtx " + name + ": depth expected " + std::to_string(d) + ", got " + std::to_string(nvtx_depth[name]));
  } else if (a == "--nvtx-threads") {
    long n = std::atol(take().c_str());
    if (static_cast<long>(nvtx_threads.size()) != n) Fail("nvtx threads: expected " + std::to_string(n) + ", got " + std::to_string(nvtx_threads.size()));
  } else if (a == "--windows") {
    long n = std::atol(take().c_str());
    if (static_cast<long>(windows.size()) != n) Fail("windows: expected " + std::to_string(n) + ", got " + std::to_string(windows.size()));
  } else if (a == "--drops") {
    long n = std::atol(take().c_str());
    if (static_cast<long>(drops) != n) Fail("drops: expected " + std::to_string(n) + ", got " + std::to_string(drops));
  } else if (a == "--kernels-in-windows") {
    // Kernels are kept when launched inside a window: they start after it opened and
    // before it closed (a kernel may end after the close).
    long outside = 0;
    for (auto& [ts, name] : kernel_starts) {
      bool in = false;
      for (auto& w : windows) in |= ts >= w.first && ts <= w.second;
      if (!in) ++outside;
    }
    if (outside) Fail(std::to_string(outside) + " kernels start outside every window");
  } else if (a == "--memcpy") {
    std::string key = take();
    if (memcpys[key] < 1) Fail("no memcpy " + key);
  } else if (a == "--memset") {
    uint64_t b = std::strtoull(take().c_str(), nullptr, 10);
    if (memsets[b] < 1) Fail("no memset of " + std::to_string(b) + " bytes");
  } else {
    return false;
  }
  return true;
}

// PM and PC sampling, counters, the end reason and devices.
bool TraceFacts::CheckSampling(const std::string& a, const Take& take) {
  if (a == "--first-kernel-sampled") {
    // The first kernel NAME launched (by start time) overlaps at least one PM sample.
    std::string name = take();
    const KernelInfo* first = nullptr;
    for (const auto& k : kernel_info) {
      if (k.name.find(name) != std::string::npos && (first == nullptr || k.start < first->start)) {
        first = &k;
      }
    }
    if (first == nullptr) {
      Fail("--first-kernel-sampled " + name + ": no such kernel");
    } else {
      long overlapping = 0;
      for (const auto& [b, e] : pm_samples) overlapping += b < first->end && e > first->start;
      if (overlapping == 0) {
        Fail("--first-kernel-sampled " + name + ": no PM sample overlaps the first launch (" +
             std::to_string(pm_samples.size()) + " samples in the trace)");
      }
    }
  } else if (a == "--counter-min") {
    auto [name, n] = KeyVal(take());
    if (static_cast<long>(counters[name]) < n) {
      Fail("counter " + name + ": expected >= " + std::to_string(n) + ", got " +
           std::to_string(counters[name]));
    }
  } else if (a == "--pc-kernels-min-ms") {
    const double min_ms = std::atof(take().c_str());
    std::map<std::string, double> longest_ms;
    for (const auto& k : kernel_info) {
      longest_ms[k.name] = std::max(longest_ms[k.name], (k.end - k.start) / 1e6);
    }
    int checked = 0;
    for (const auto& [name, ms] : longest_ms) {
      if (ms < min_ms) continue;
      ++checked;
      const uint64_t n = pc_samples_by_function.count(name) ? pc_samples_by_function[name] : 0;
      std::printf("  pc-kernel %-60.60s longest=%9.3f ms samples=%llu %s\n", name.c_str(), ms,
                  (unsigned long long)n, n > 0 ? "ok" : "MISSING");
      if (n == 0) Fail("--pc-kernels-min-ms: kernel " + name + " ran " + std::to_string(ms) +
                       " ms and has no PC samples");
    }
    if (checked == 0) Fail("--pc-kernels-min-ms: no kernel ran that long");
  } else if (a == "--cubins-cover-pcs") {
    for (uint64_t crc : pc_crcs) {
      auto it = cubin_bytes.find(crc);
      if (it == cubin_bytes.end() || it->second.first != it->second.second) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "--cubins-cover-pcs: no whole cubin for crc 0x%llx",
                      (unsigned long long)crc);
        Fail(buf);
      }
    }
    if (pc_crcs.empty()) Fail("--cubins-cover-pcs: no PC records");
  } else if (a == "--end-reason") {
    std::string r = take();
    int want = r == "exit" ? 1 : r == "signal" ? 2 : r == "crash" ? 7 : 0;
    if (end_reason != want) Fail("end reason: expected " + r + ", got " + std::to_string(end_reason));
  } else if (a == "--devices-min") {
    long n = std::atol(take().c_str());
    if (devices < n) Fail("devices: expected >= " + std::to_string(n) + ", got " + std::to_string(devices));
  } else {
    return false;
  }
  return true;
}

// Capture window times, and kernel durations against CUDA events.
bool TraceFacts::CheckTiming(const std::string& a, const Take& take) {
  if (a == "--window-near") {
    // BEGIN_S:END_S:TOL_S, relative to trace time 0 (header time base).
    double b = 0, e = 0, tol = 0;
    std::sscanf(take().c_str(), "%lf:%lf:%lf", &b, &e, &tol);
    if (windows.empty()) {
      Fail("no window");
    } else {
      double wb = windows[0].first / 1e9, we = windows[0].second / 1e9;
      if (std::fabs(wb - b) > tol || std::fabs(we - e) > tol) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "window [%.3f, %.3f] s, expected [%.3f, %.3f] +- %.3f", wb, we, b, e, tol);
        Fail(buf);
      }
    }
  } else if (a == "--window-length") {
    // SECONDS:TOL_S for the first window.
    double len = 0, tol = 0;
    std::sscanf(take().c_str(), "%lf:%lf", &len, &tol);
    if (windows.empty() || windows[0].second == UINT64_MAX) {
      Fail("no closed window");
    } else {
      double got = (windows[0].second - windows[0].first) / 1e9;
      if (std::fabs(got - len) > tol) Fail("window length " + std::to_string(got) + " s, expected " + std::to_string(len));
    }
  } else if (a == "--event-times") {
    // Durations of ws_spin kernels against CUDA-event times printed by `ws_repro timed`.
    std::ifstream in(take());
    std::vector<double> ev;
    std::string word;
    double ns;
    while (in >> word >> ns) if (word == "event_ns") ev.push_back(ns);
    // Leading ws_spin kernels without an event line are warm-ups.
    if (spin_durations.size() > ev.size()) {
      spin_durations.erase(spin_durations.begin(),
                           spin_durations.end() - static_cast<long>(ev.size()));
    }
    if (ev.size() != spin_durations.size()) {
      Fail("ws_spin kernels " + std::to_string(spin_durations.size()) + " vs events " + std::to_string(ev.size()));
    } else {
      double worst = 0;
      std::vector<double> diffs;
      for (size_t k = 0; k < ev.size(); ++k) {
        // The event pair brackets the kernel: the event interval is the kernel plus the
        // GPU-side gaps between the events and the kernel (seen up to ~20 us on the H200).
        double diff = ev[k] - static_cast<double>(spin_durations[k]);
        diffs.push_back(diff);
        worst = std::max(worst, std::fabs(diff) / ev[k]);
        if (diff < -2000 || diff > 0.10 * ev[k] + 25000) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "kernel %zu: trace %.0f ns vs cuda events %.0f ns", k, (double)spin_durations[k], ev[k]);
          Fail(buf);
        }
      }
      std::sort(diffs.begin(), diffs.end());
      std::printf("  duration agreement over %zu kernels (50-200 us): event - trace median %.0f ns, "
                  "min %.0f ns, max %.0f ns, worst relative %.4f\n", ev.size(),
                  diffs[diffs.size() / 2], diffs.front(), diffs.back(), worst);
    }
  } else {
    return false;
  }
  return true;
}

// Contexts, devices and graph launches.
bool TraceFacts::CheckPlacement(const std::string& a, const Take& take) {
  if (a == "--distinct-contexts" || a == "--distinct-devices") {
    // Comma list of name substrings. Each name: at least one kernel, all of its kernels in
    // one context (one device) with a non-zero context id; two names never share a
    // context (device).
    const bool by_device = a == "--distinct-devices";
    const char* what = by_device ? "device" : "context";
    std::vector<std::string> names;
    std::stringstream ss(take());
    for (std::string n; std::getline(ss, n, ',');) if (!n.empty()) names.push_back(n);
    if (names.size() < 2) Fail(a + " needs at least two names");
    std::map<uint32_t, std::string> owner;
    for (const auto& n : names) {
      std::set<uint32_t> ids;
      long count = 0;
      for (const auto& k : kernel_info) {
        if (k.name.find(n) == std::string::npos) continue;
        ++count;
        ids.insert(by_device ? k.device : k.context);
      }
      if (count == 0) { Fail(a + " " + n + ": no kernel"); continue; }
      if (ids.size() != 1) {
        std::string list;
        for (uint32_t id : ids) list += " " + std::to_string(id);
        Fail(a + " " + n + ": kernels in " + std::to_string(ids.size()) + " " + what + "s:" + list);
        continue;
      }
      uint32_t id = *ids.begin();
      if (!by_device && id == 0) Fail(a + " " + n + ": context id 0");
      auto [it, fresh] = owner.emplace(id, n);
      if (!fresh) Fail(a + ": " + n + " and " + it->second + " share " + what + " " + std::to_string(id));
    }
  } else if (a == "--graph-launches") {
    long n = std::atol(take().c_str());
    if (static_cast<long>(graph_launch_ids.size()) != n) {
      Fail("graph launches: expected " + std::to_string(n) + ", got " + std::to_string(graph_launch_ids.size()));
    }
    long zero = std::count(graph_launch_ids.begin(), graph_launch_ids.end(), 0u);
    if (zero) Fail(std::to_string(zero) + " graph launches with graph id 0");
  } else {
    return false;
  }
  return true;
}

// Kernels in graphs, and a kernel kept whole across a window edge.
bool TraceFacts::CheckGraphsAndStraddles(const std::string& a, const Take& take) {
  if (a == "--in-graph" || a == "--not-in-graph") {
    // Every kernel matching NAME (at least one) has a non-zero (--in-graph) or zero graph id.
    std::string name = take();
    long count = 0, wrong = 0;
    for (const auto& k : kernel_info) {
      if (k.name.find(name) == std::string::npos) continue;
      ++count;
      if ((k.graph != 0) != (a == "--in-graph")) ++wrong;
    }
    if (count == 0) Fail(a + " " + name + ": no kernel");
    if (wrong) Fail(a + " " + name + ": " + std::to_string(wrong) + " of " + std::to_string(count) +
                    (a == "--in-graph" ? " kernels have graph id 0" : " kernels have a graph id"));
  } else if (a == "--straddles") {
    // NAME=MIN_MS: exactly one kernel matching NAME; it starts inside a closed window, ends
    // after that window closed, and its duration is at least MIN_MS (kept whole).
    auto [name, min_ms] = KeyVal(take());
    std::vector<const KernelInfo*> ks;
    for (const auto& k : kernel_info) if (k.name.find(name) != std::string::npos) ks.push_back(&k);
    if (ks.size() != 1) {
      Fail("--straddles " + name + ": expected 1 kernel, got " + std::to_string(ks.size()));
    } else {
      const KernelInfo& k = *ks[0];
      const std::pair<uint64_t, uint64_t>* w = nullptr;
      for (auto& win : windows) if (k.start >= win.first && k.start <= win.second) w = &win;
      char buf[300];
      if (w == nullptr) {
        std::snprintf(buf, sizeof buf, "--straddles %s: the kernel starts outside every window", name.c_str());
        Fail(buf);
      } else if (w->second == UINT64_MAX) {
        Fail("--straddles " + name + ": its window never closed");
      } else {
        double dur_ms = (k.end - k.start) / 1e6;
        double after_ms = (static_cast<double>(k.end) - static_cast<double>(w->second)) / 1e6;
        std::printf("  straddle %s: starts %.3f ms after the window opened, ends %.3f ms after it "
                    "closed, duration %.3f ms\n", name.c_str(), (k.start - w->first) / 1e6, after_ms, dur_ms);
        if (k.end <= w->second) {
          std::snprintf(buf, sizeof buf, "--straddles %s: ends %.3f ms before the window closed (no straddle)", name.c_str(), -after_ms);
          Fail(buf);
        }
        if (dur_ms < static_cast<double>(min_ms)) {
          std::snprintf(buf, sizeof buf, "--straddles %s: duration %.3f ms < %ld ms (not whole)", name.c_str(), dur_ms, min_ms);
          Fail(buf);
        }
      }
    }
  } else {
    return false;
  }
  return true;
}

}  // namespace ws_trace_check

using ws_trace_check::Load;
using ws_trace_check::Loaded;
using ws_trace_check::TraceFacts;
using ws_trace_check::g_failures;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ws_trace_check FILE [checks...]\n");
    return 2;
  }
  Loaded t;
  if (!Load(argv[1], &t)) {
    std::fprintf(stderr, "ws_trace_check: cannot read %s\n", argv[1]);
    return 1;
  }
  TraceFacts facts(t);
  for (const auto& p : t.packets) facts.Add(p);
  facts.Finish();

  bool dump = false;
  for (int i = 2; i < argc; ++i) dump |= std::string(argv[i]) == "--dump";
  facts.Print(argv[1], dump);

  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    std::string v = i + 1 < argc ? argv[i + 1] : "";
    auto take = [&]() { ++i; return v; };
    if (a == "--dump") continue;
    if (!facts.CheckContents(a, take) && !facts.CheckSampling(a, take) &&
        !facts.CheckTiming(a, take) && !facts.CheckPlacement(a, take) &&
        !facts.CheckGraphsAndStraddles(a, take)) {
      std::fprintf(stderr, "ws_trace_check: unknown check %s\n", a.c_str());
      return 2;
    }
  }
  if (g_failures) std::fprintf(stderr, "ws_trace_check: %d check(s) failed for %s\n", g_failures, argv[1]);
  return g_failures ? 1 : 0;
}
