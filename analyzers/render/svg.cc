// SVG text escaping and the time line of boxes (svg.h).
#include "analyzers/render/svg.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/render/output.h"

namespace warpscope {
namespace {

constexpr double kTop = 34;          // y of the first row
constexpr double kRowHeight = 22;    // px per row
constexpr double kBoxHeight = 16;    // px, a box within its row
constexpr double kCharWidth = 6.2;   // px per character at font-size 11, to fit names
constexpr double kAxisHeight = 30;   // px under the rows
constexpr double kLegendHeight = 24;

constexpr const char* kClassStyle =
    ".kernel{fill:#4a7fc1}.copy{fill:#3c9a5f}.memset{fill:#999}.wait{fill:#d9534f}"
    ".api{fill:#c9b458}.range{fill:#b48fd1}.overhead{fill:#555}"
    ".nccl{fill:#2a9d8f}.nccl-wait{fill:#f4a261}"
    ".gap{fill:#d9534f;fill-opacity:0.15}"
    ".name{fill:#111;pointer-events:none}.axis{stroke:#888}";

// What each box class stands for, in legend order.
constexpr std::pair<const char*, const char*> kClassMeaning[] = {
    {"kernel", "kernel"},         {"copy", "memory copy"},
    {"memset", "memset"},         {"api", "CUDA API call"},
    {"wait", "API call waiting for the GPU"}, {"range", "NVTX range"},
    {"overhead", "recording overhead"},
    {"nccl", "NCCL collective moving data"},
    {"nccl-wait", "NCCL collective waiting for the last rank"}};

}  // namespace

std::string SvgEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

SvgTimeline::SvgTimeline(uint64_t begin_ns, uint64_t end_ns, Options options)
    : begin_(begin_ns), end_(std::max(begin_ns, end_ns)), options_(options) {}

void SvgTimeline::AddRow(const std::string& row) {
  if (row_index_.try_emplace(row, rows_.size()).second) rows_.push_back({row, {}});
}

bool SvgTimeline::Add(const std::string& row, uint64_t start_ns, uint64_t end_ns,
                      std::string cls, std::string label, std::string name) {
  if (end_ns < begin_ || start_ns > end_) return false;
  if (boxes_ >= options_.max_boxes) {
    ++left_out_;
    return false;
  }
  ++boxes_;
  AddRow(row);
  rows_[row_index_.find(row)->second].second.push_back(
      {std::max(start_ns, begin_), std::min(end_ns, end_), std::move(cls), std::move(label),
       std::move(name)});
  return true;
}

void SvgTimeline::AddGap(uint64_t start_ns, uint64_t end_ns) {
  if (end_ns > begin_ && start_ns < end_) {
    gaps_.push_back({std::max(start_ns, begin_), std::min(end_ns, end_)});
  }
}

double SvgTimeline::X(uint64_t t) const {
  const double span = static_cast<double>(std::max<uint64_t>(end_ - begin_, 1));
  return options_.label_width + options_.chart_width * static_cast<double>(t - begin_) / span;
}

// Ticks 1, 2 or 5 times a power of ten apart, about eight over the window.
std::string SvgTimeline::Axis(double y) const {
  const double span = static_cast<double>(std::max<uint64_t>(end_ - begin_, 1));
  double step = std::pow(10.0, std::floor(std::log10(span / 8)));
  if (span / step > 40) {
    step *= 5;
  } else if (span / step > 16) {
    step *= 2;
  }
  const int decimals = std::clamp(static_cast<int>(-std::floor(std::log10(step / 1e6))), 0, 6);
  std::string s = absl::StrFormat(
      "<line class=\"axis\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/>\n", X(begin_), y,
      X(end_), y);
  // Counted, not stepped: far from 0 (a damaged trace's times) adding `step` can leave t as
  // it was.
  const double first = std::ceil(static_cast<double>(begin_) / step) * step;
  for (int i = 0; i < 100; ++i) {
    const double t = first + step * i;
    if (t > static_cast<double>(end_)) break;
    const double x = X(begin_) + options_.chart_width * (t - static_cast<double>(begin_)) / span;
    absl::StrAppendFormat(&s,
                          "<line class=\"axis\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/>"
                          "<text class=\"tick\" x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">"
                          "%.*f ms</text>\n",
                          x, y, x, y + 4, x, y + 16, decimals, t / 1e6);
  }
  return s;
}

std::string SvgTimeline::Legend(double y) const {
  std::string s;
  double x = options_.label_width;
  for (const auto& entry : kClassMeaning) {
    const auto& [cls, meaning] = entry;
    // Lambdas capture the pair, not its bindings (clang 14 does not capture bindings).
    const bool used = std::any_of(rows_.begin(), rows_.end(), [&](const auto& row) {
      return std::any_of(row.second.begin(), row.second.end(),
                         [&](const Box& b) { return b.cls == entry.first; });
    });
    if (!used) continue;
    absl::StrAppendFormat(&s,
                          "<rect class=\"%s legend\" x=\"%.0f\" y=\"%.0f\" width=\"12\" "
                          "height=\"12\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                          cls, x, y, x + 16, y + 10, meaning);
    x += 16 + kCharWidth * static_cast<double>(std::string_view(meaning).size()) + 18;
  }
  if (!gaps_.empty()) {
    absl::StrAppendFormat(&s,
                          "<rect class=\"gap legend\" x=\"%.0f\" y=\"%.0f\" width=\"12\" "
                          "height=\"12\"/><text x=\"%.0f\" y=\"%.0f\">GPU idle</text>\n",
                          x, y, x + 16, y + 10);
  }
  return s;
}

std::string SvgTimeline::Render(std::string_view title, std::string_view caption) const {
  std::vector<size_t> order(rows_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (options_.sort_rows) {
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return rows_[a].first < rows_[b].first; });
  }
  const double rows_bottom = kTop + kRowHeight * static_cast<double>(rows_.size());
  const double height = rows_bottom + (options_.axis ? kAxisHeight : 0) +
                        (options_.legend ? kLegendHeight : 0) + 30;
  std::string s = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" width=\"%.0f\" "
      "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\">\n<title>%s</title>\n"
      "<style>%s</style>\n",
      options_.label_width + options_.chart_width + 10, height, SvgEscape(title), kClassStyle);
  for (const auto& [start, stop] : gaps_) {
    absl::StrAppendFormat(&s,
                          "<rect class=\"gap\" x=\"%.1f\" y=\"30\" width=\"%.1f\" "
                          "height=\"%.0f\"><title>GPU idle %s</title></rect>\n",
                          X(start), std::max(1.0, X(stop) - X(start)), rows_bottom - 30,
                          SvgEscape(FormatDuration(static_cast<double>(stop - start))));
  }
  double y = kTop;
  for (size_t i : order) {
    const auto& [row, boxes] = rows_[i];
    absl::StrAppendFormat(&s, "<text class=\"row\" x=\"4\" y=\"%.0f\">%s</text>\n", y + 12,
                          SvgEscape(row));
    for (const Box& b : boxes) {
      const double width = std::max(0.5, X(b.end_ns) - X(b.start_ns));
      absl::StrAppendFormat(&s,
                            "<rect class=\"%s\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" "
                            "height=\"%.0f\"><title>%s (%s)</title></rect>\n",
                            b.cls, X(b.start_ns), y, width, kBoxHeight, SvgEscape(b.label),
                            SvgEscape(FormatDuration(static_cast<double>(b.end_ns - b.start_ns))));
      const size_t fits = static_cast<size_t>(std::max(0.0, (width - 4) / kCharWidth));
      if (options_.names_in_boxes && fits >= 4) {
        const std::string& text = b.name.empty() ? b.label : b.name;
        size_t keep = text.size() <= fits ? text.size() : fits - 2;
        while (keep < text.size() && (text[keep] & 0xC0) == 0x80) --keep;  // UTF-8
        std::string name = text.substr(0, keep);
        if (keep < text.size()) name += "..";
        absl::StrAppendFormat(&s, "<text class=\"name\" x=\"%.1f\" y=\"%.0f\">%s</text>\n",
                              X(b.start_ns) + 2, y + 12, SvgEscape(name));
      }
    }
    y += kRowHeight;
  }
  if (options_.axis) absl::StrAppend(&s, Axis(rows_bottom + 4));
  if (options_.legend) {
    absl::StrAppend(&s, Legend(rows_bottom + (options_.axis ? kAxisHeight : 0) + 4));
  }
  absl::StrAppendFormat(&s, "<text x=\"%.0f\" y=\"18\">%s%s</text>\n", options_.label_width,
                        SvgEscape(caption),
                        left_out_ > 0 ? absl::StrCat("; ", left_out_, " boxes not drawn") : "");
  return s + "</svg>\n";
}

}  // namespace warpscope
