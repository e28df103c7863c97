// Device memory in `warpscope summary` (summary.h): each trace's peak in use and reserved per
// device, who held the peak, growth across the steady steps and the requests the driver
// refused, from memory.h's digest (the figures of `warpscope memory`).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/summary.h"

namespace warpscope {
namespace {

size_t FailuresOn(const MemoryDigest& digest, uint32_t device) {
  size_t n = 0;
  for (const MemoryFailureDigest& f : digest.failures) n += f.failure.device_id == device;
  return n;
}

Cell BytesCell(bool human, uint64_t bytes) {
  return human ? Cell(FormatBytes(static_cast<double>(bytes))) : Cell(bytes);
}

// The peak as a share of the device's memory; empty when its size is unknown.
Cell CapacityShare(const DeviceMemoryDigest& d) {
  if (d.capacity_bytes == 0) return Cell();
  return Cell(100.0 * static_cast<double>(d.peak_bytes) / static_cast<double>(d.capacity_bytes), 1);
}

}  // namespace

bool HasDeviceMemory(const std::vector<TraceSummary>& summaries) {
  for (const TraceSummary& t : summaries) {
    if (!t.device_memory.devices.empty()) return true;
  }
  return false;
}

Table DeviceMemoryTable(const std::vector<TraceSummary>& summaries, bool human) {
  const CellKind bytes = human ? CellKind::kString : CellKind::kInt;
  std::vector<Table::Column> cols;
  if (!human) cols.push_back({"file", false, CellKind::kString});
  cols.insert(cols.end(),
              {{human ? "Device" : "device", true, CellKind::kInt},
               {human ? "Peak" : "peak_bytes", true, bytes},
               {human ? "Reserved at peak" : "reserved_at_peak_bytes", true, bytes},
               {human ? "Peak reserved" : "peak_reserved_bytes", true, bytes},
               {human ? "Capacity" : "capacity_bytes", true, bytes},
               {human ? "Peak %" : "peak_percent", true, CellKind::kReal},
               {human ? "Growth/step" : "growth_per_step_bytes", true,
                human ? CellKind::kString : CellKind::kReal},
               {human ? "Leak" : "leak", false, CellKind::kBool},
               {human ? "Refused" : "failed_requests", true, CellKind::kInt},
               {human ? "Held at the peak by" : "owners_at_peak", false, CellKind::kString}});
  if (!human) {
    cols.push_back({"peak_ns", true, CellKind::kInt});
    cols.push_back({"growth_site", false, CellKind::kString});
  }
  Table table(std::move(cols));
  for (const TraceSummary& t : summaries) {
    for (const DeviceMemoryDigest& d : t.device_memory.devices) {
      const MemoryGrowth& g = d.growth;
      const double per_step = g.slope ? g.slope->per_step : 0.0;
      std::vector<Cell> row;
      if (!human) row.emplace_back(t.label);
      row.insert(
          row.end(),
          {Cell(d.device_id), BytesCell(human, d.peak_bytes),
           BytesCell(human, d.reserved_at_peak_bytes), BytesCell(human, d.peak_reserved_bytes),
           d.capacity_bytes == 0 ? Cell() : BytesCell(human, d.capacity_bytes), CapacityShare(d),
           !g.slope ? Cell()
           : human  ? Cell(FormatBytes(per_step))
                    : Cell(per_step, 0),
           Cell::Bool(g.leak),
           Cell(static_cast<uint64_t>(FailuresOn(t.device_memory, d.device_id))),
           MemoryOwnersText(d.owners_at_peak, human ? 2 : 3)});
      if (!human) {
        row.emplace_back(d.peak_ns);
        row.emplace_back(d.growth_site);
      }
      table.AddRow(std::move(row));
    }
  }
  return table;
}

std::vector<std::string> DeviceMemoryLines(const TraceSummary& summary) {
  const MemoryDigest& m = summary.device_memory;
  std::vector<std::string> lines;
  for (const DeviceMemoryDigest& d : m.devices) {
    if (!d.growth.leak) continue;
    lines.push_back(absl::StrCat(
        "device ", d.device_id, ": memory grows by ", d.growth.RateText(),
        d.steady_steps == 0 ? "" : absl::StrCat(" over ", d.steady_steps, " steps"), ": a leak",
        d.growth_site.empty() ? "" : absl::StrCat(", most at ", d.growth_site)));
  }
  for (const MemoryFailureDigest& f : m.failures) {
    lines.push_back(absl::StrCat("device ", f.failure.device_id, ": a request for ",
                                 FormatBytes(static_cast<double>(f.failure.bytes_asked)),
                                 " was refused with ",
                                 FormatBytes(static_cast<double>(f.failure.in_use_bytes)),
                                 " in use, asked from ", f.site));
  }
  return lines;
}

}  // namespace warpscope
