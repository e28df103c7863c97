// What every SVG warpscope draws needs: text escaped for SVG, and the time line of boxes that
// `warpscope timeline` and the advise page draw (SvgTimeline). The other charts live with
// their analysis (measures/active_warps_svg.h, the stall bars in analyses/stalls_render.cc).
#ifndef WARPSCOPE_ANALYZERS_RENDER_SVG_H_
#define WARPSCOPE_ANALYZERS_RENDER_SVG_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warpscope {

// Escapes &, <, >, " and ' for SVG text and attributes.
std::string SvgEscape(std::string_view text);

// A time line from begin_ns to end_ns: labelled rows of boxes, each box of a class that
// colors it (kernel, copy, memset, api, wait, range) with its label and duration as a
// tooltip; optionally shaded gaps, a time axis, a legend and names written in boxes wide
// enough for them. Boxes are clipped to the window; those outside it are not drawn.
class SvgTimeline {
 public:
  struct Options {
    double chart_width = 1000;  // px, the time axis
    double label_width = 150;   // px, row labels left of it
    size_t max_boxes = 4000;    // boxes drawn; the rest are counted in the caption
    bool sort_rows = false;     // rows by label; else in the order first used
    bool names_in_boxes = false;
    bool axis = false;    // ticks and times (ms since trace time 0) under the rows
    bool legend = false;  // the classes used, with what they stand for
  };
  SvgTimeline(uint64_t begin_ns, uint64_t end_ns, Options options);
  SvgTimeline(uint64_t begin_ns, uint64_t end_ns) : SvgTimeline(begin_ns, end_ns, Options{}) {}

  // Declares a row now, so that rows keep this order even before they get boxes.
  void AddRow(const std::string& row);
  // A box on `row` (declared on first use); `name`, when given, is what is written in the
  // box instead of the label. False when it lies outside the window or over the box limit
  // (then counted).
  bool Add(const std::string& row, uint64_t start_ns, uint64_t end_ns, std::string cls,
           std::string label, std::string name = "");
  // A stretch shaded across all rows (GPU idle on the advise page).
  void AddGap(uint64_t start_ns, uint64_t end_ns);
  size_t boxes() const { return boxes_; }
  size_t boxes_left_out() const { return left_out_; }

  // The <svg> element; `caption` is written above the rows.
  std::string Render(std::string_view title, std::string_view caption) const;

 private:
  struct Box {
    uint64_t start_ns, end_ns;
    std::string cls, label, name;
  };
  double X(uint64_t t) const;
  std::string Axis(double y) const;
  std::string Legend(double y) const;

  uint64_t begin_, end_;
  Options options_;
  std::vector<std::pair<std::string, std::vector<Box>>> rows_;
  std::map<std::string, size_t, std::less<>> row_index_;
  std::vector<std::pair<uint64_t, uint64_t>> gaps_;
  size_t boxes_ = 0, left_out_ = 0;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_RENDER_SVG_H_
