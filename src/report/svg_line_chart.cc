#include "report/svg_line_chart.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/html_escape.h"
#include "report/svg_util.h"

namespace eroica {
namespace {

constexpr int kLeft = 56;
constexpr int kRight = 20;
constexpr int kTop = 26;
constexpr int kBottom = 44;

struct Bounds {
  double x_low = std::numeric_limits<double>::max(), x_high = std::numeric_limits<double>::lowest();
  double y_low = std::numeric_limits<double>::max(), y_high = std::numeric_limits<double>::lowest();
  bool empty() const { return x_low > x_high; }
};

Bounds DataBounds(const LineChart& chart) {
  Bounds b;
  for (const LineSeries& s : chart.series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      b.x_low = std::min(b.x_low, x), b.x_high = std::max(b.x_high, x);
      b.y_low = std::min(b.y_low, y), b.y_high = std::max(b.y_high, y);
    }
  }
  for (const LineMarker& m : chart.markers) b.x_low = std::min(b.x_low, m.x), b.x_high = std::max(b.x_high, m.x);
  for (const LineRange& r : chart.ranges) b.x_low = std::min(b.x_low, r.x_low), b.x_high = std::max(b.x_high, r.x_high);
  bool has_points = b.y_low <= b.y_high;
  if (!has_points) return Bounds{};  // markers alone make no chart
  if (chart.y_clip > 0) b.y_high = std::min(b.y_high, chart.y_clip);
  if (chart.y_from_zero) b.y_low = std::min(0.0, b.y_low);
  if (b.x_high <= b.x_low) b.x_high = b.x_low + 1;
  if (b.y_high <= b.y_low) b.y_high = b.y_low + 1;
  return b;
}

std::string Axes(const LinearScale& x, const LinearScale& y, const LineChart& chart, int width, int height) {
  std::string out;
  for (double t : NiceTicks(y.domain_low, y.domain_high, 4)) {
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>"
        "<text class=\"ticklabel y\" x=\"{3}\" y=\"{4}\">{5}</text>",
        kLeft, SvgNumber(y(t)), width - kRight, kLeft - 6, SvgNumber(y(t) + 4), TickLabel(t));
  }
  int bottom = height - kBottom;
  out +=
      fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>", kLeft, bottom, width - kRight);
  for (double t : NiceTicks(x.domain_low, x.domain_high, 8)) {
    if (chart.x_integer && t != std::floor(t)) continue;
    out += fmt::format(
        "<line class=\"tick\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>"
        "<text class=\"ticklabel\" x=\"{0}\" y=\"{3}\">{4}</text>",
        SvgNumber(x(t)), bottom, bottom + 4, bottom + 16, TickLabel(t));
  }
  out += fmt::format("<text class=\"axislabel\" x=\"{}\" y=\"{}\">{}</text>", (kLeft + width - kRight) / 2, bottom + 34,
                     EscapeHtml(chart.x_label));
  out += fmt::format("<text class=\"axislabel\" transform=\"translate(14,{}) rotate(-90)\">{}</text>\n",
                     (kTop + bottom) / 2, EscapeHtml(chart.y_label));
  return out;
}

std::string Legend(const LineChart& chart, int width) {
  std::string out;
  int x = kLeft;
  for (const LineSeries& s : chart.series) {
    if (s.label.empty()) continue;
    out += fmt::format(
        "<line class=\"series {0}\" x1=\"{1}\" y1=\"12\" x2=\"{2}\" y2=\"12\"/>"
        "<text class=\"legendlabel\" x=\"{3}\" y=\"16\">{4}</text>",
        EscapeHtml(s.css_class), x, x + 18, x + 22, EscapeHtml(s.label));
    x += 30 + static_cast<int>(s.label.size()) * 6;
    if (x > width - 80) break;
  }
  return out + "\n";
}

}  // namespace

std::string RenderLineChartSvg(const LineChart& chart, int width, int height) {
  Bounds b = DataBounds(chart);
  if (b.empty()) return "";
  int bottom = height - kBottom;
  LinearScale x{b.x_low, b.x_high, static_cast<double>(kLeft), static_cast<double>(width - kRight)};
  LinearScale plain_y{b.y_low, b.y_high * 1.08, static_cast<double>(bottom), static_cast<double>(kTop)};
  auto y = [&](double value) { return plain_y(chart.y_clip > 0 ? std::min(value, chart.y_clip) : value); };
  std::string out = fmt::format(
      "<svg class=\"linechart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2}\">\n",
      width, height, EscapeHtml(chart.y_label));
  for (const LineRange& r : chart.ranges) {
    out += fmt::format(
        "<rect class=\"range\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect>"
        "<text class=\"rangelabel\" x=\"{}\" y=\"{}\">{}</text>\n",
        SvgNumber(x(r.x_low)), kTop, SvgNumber(std::max(2.0, x(r.x_high) - x(r.x_low))), bottom - kTop,
        EscapeHtml(r.label), SvgNumber(x(r.x_low) + 3), kTop + 11, EscapeHtml(r.label));
  }
  out += Axes(x, plain_y, chart, width, height);
  if (!chart.clip_note.empty()) {
    out += fmt::format("<text class=\"rangelabel\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", width - kRight,
                       kTop - 4, EscapeHtml(chart.clip_note));
  }
  for (const LineMarker& m : chart.markers) {
    out += fmt::format(
        "<line class=\"marker\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>"
        "<text class=\"markerlabel\" x=\"{3}\" y=\"{4}\">{5}</text>\n",
        SvgNumber(x(m.x)), kTop, bottom, SvgNumber(x(m.x) - 3), kTop + 24, EscapeHtml(m.label));
  }
  for (const LineSeries& s : chart.series) {
    std::string points;
    for (const auto& [px, py] : s.points) {
      if (std::isfinite(px) && std::isfinite(py)) points += SvgNumber(x(px)) + "," + SvgNumber(y(py)) + " ";
    }
    out += fmt::format("<polyline class=\"series {}\" points=\"{}\"><title>{}</title></polyline>\n",
                       EscapeHtml(s.css_class), points, EscapeHtml(s.label));
    if (s.points.size() <= 60) {
      for (const auto& [px, py] : s.points) {
        out += fmt::format(
            "<circle class=\"point {}\" cx=\"{}\" cy=\"{}\" r=\"2.2\"><title>{}: {} → {:.4g}</title></circle>",
            EscapeHtml(s.css_class), SvgNumber(x(px)), SvgNumber(y(py)), EscapeHtml(s.label), TickLabel(px), py);
      }
      out += "\n";
    }
  }
  out += Legend(chart, width);
  return out + "</svg>\n";
}

}  // namespace eroica
