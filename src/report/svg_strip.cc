#include "report/svg_strip.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "report/html_escape.h"
#include "report/svg_util.h"

namespace eroica {
namespace {

constexpr int kLeft = 30;
constexpr int kRight = 30;
constexpr int kTop = 34;
constexpr int kPlotHeight = 90;
constexpr int kMaxLabels = 8;

// Deterministic jitter in [0, 1) from the rank, so the picture is reproducible.
double Jitter(int rank) {
  uint32_t x = static_cast<uint32_t>(rank) * 2654435761u;
  x ^= x >> 15;
  return (x % 1000) / 1000.0;
}

std::string Axis(const LinearScale& x, const std::string& label, int y) {
  std::string out = fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                                SvgNumber(x.range_low), y, SvgNumber(x.range_high), y);
  for (double t : NiceTicks(x.domain_low, x.domain_high, 6)) {
    out += fmt::format(
        "<line class=\"tick\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>"
        "<text class=\"ticklabel\" x=\"{0}\" y=\"{3}\">{4}</text>",
        SvgNumber(x(t)), y, y + 4, y + 16, TickLabel(t));
  }
  out += fmt::format("<text class=\"axislabel\" x=\"{}\" y=\"{}\">{}</text>\n",
                     SvgNumber((x.range_low + x.range_high) / 2), y + 32, EscapeHtml(label));
  return out;
}

std::string Dots(const StripPlot& plot, const LinearScale& x) {
  std::string out;
  for (const StripPoint& p : plot.points) {
    if (p.suspect) continue;
    double y = kTop + 10 + Jitter(p.rank) * (kPlotHeight - 20);
    out += fmt::format("<circle class=\"dot\" cx=\"{}\" cy=\"{}\" r=\"3\"><title>rank {}: {:.4f}</title></circle>",
                       SvgNumber(x(p.value)), SvgNumber(y), p.rank, p.value);
  }
  return out + "\n";
}

std::string Histogram(const StripPlot& plot, const LinearScale& x) {
  constexpr int kBins = 60;
  std::vector<int> counts(kBins, 0);
  double span = x.domain_high - x.domain_low;
  for (const StripPoint& p : plot.points) {
    int bin = static_cast<int>((p.value - x.domain_low) / span * kBins);
    ++counts[std::clamp(bin, 0, kBins - 1)];
  }
  int most = std::max(1, *std::max_element(counts.begin(), counts.end()));
  double bin_width = (x.range_high - x.range_low) / kBins;
  std::string out;
  for (int b = 0; b < kBins; ++b) {
    if (counts[b] == 0) continue;
    // Square-root heights keep a bin of one worker visible beside a bin of ten thousand.
    double h = std::max(1.5, std::sqrt(static_cast<double>(counts[b]) / most) * (kPlotHeight - 10));
    out += fmt::format(
        "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{} workers in "
        "[{:.4f}, {:.4f})</title></rect>",
        SvgNumber(x.range_low + b * bin_width), SvgNumber(kTop + kPlotHeight - h),
        SvgNumber(std::max(1.0, bin_width - 1)), SvgNumber(h), counts[b], x.domain_low + b * span / kBins,
        x.domain_low + (b + 1) * span / kBins);
  }
  return out + "\n";
}

std::string Suspects(const StripPlot& plot, const LinearScale& x) {
  std::string out;
  int labelled = 0;
  for (const StripPoint& p : plot.points) {
    if (!p.suspect) continue;
    double cx = x(p.value);
    double cy = kTop + kPlotHeight / 2.0;
    if (p.sigma >= 0) {
      out += fmt::format("<line class=\"whisker\" x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\"/>",
                         SvgNumber(x(p.value - p.sigma)), SvgNumber(x(p.value + p.sigma)), SvgNumber(cy));
    }
    out +=
        fmt::format("<circle class=\"dot suspect\" cx=\"{}\" cy=\"{}\" r=\"6\"><title>rank {}: {:.4f}</title></circle>",
                    SvgNumber(cx), SvgNumber(cy), p.rank, p.value);
    if (labelled++ < kMaxLabels) {
      out += fmt::format("<text class=\"suspectlabel\" x=\"{}\" y=\"{}\">rank {}</text>", SvgNumber(cx),
                         SvgNumber(kTop - 8 - (labelled - 1) % 2 * 12), p.rank);
    }
  }
  return out + "\n";
}

}  // namespace

std::string RenderStripSvg(const StripPlot& plot, int width) {
  if (plot.points.empty()) return "";
  double high = plot.reference;
  for (const StripPoint& p : plot.points) high = std::max(high, p.value + std::max(0.0, p.sigma));
  double low = 0;
  for (const StripPoint& p : plot.points) low = std::min(low, p.value - std::max(0.0, p.sigma));
  if (high <= low) high = low + 0.01;
  LinearScale x{low, high * 1.05, static_cast<double>(kLeft), static_cast<double>(width - kRight)};
  int height = kTop + kPlotHeight + 44;
  std::string out = fmt::format(
      "<svg class=\"strip\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" role=\"img\" aria-label=\"{2}\">\n",
      width, height, EscapeHtml(plot.axis_label));
  out += fmt::format("<rect class=\"plotbg\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", kLeft, kTop,
                     width - kLeft - kRight, kPlotHeight);
  out += plot.points.size() > plot.max_dots ? Histogram(plot, x) : Dots(plot, x);
  if (plot.reference >= 0) {
    out += fmt::format(
        "<line class=\"reference\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>"
        "<text class=\"referencelabel\" x=\"{0}\" dx=\"4\" y=\"{3}\">{4}</text>\n",
        SvgNumber(x(plot.reference)), kTop, kTop + kPlotHeight, kTop + 11, EscapeHtml(plot.reference_label));
  }
  out += Suspects(plot, x);
  out += Axis(x, plot.axis_label, kTop + kPlotHeight);
  return out + "</svg>\n";
}

}  // namespace eroica
