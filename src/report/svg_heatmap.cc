#include "report/svg_heatmap.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "report/html_escape.h"
#include "report/svg_util.h"

namespace eroica {
namespace {

constexpr int kLabelWidth = 150;
constexpr int kHeaderHeight = 170;
constexpr int kCellWidth = 46;
constexpr int kLegendWidth = 160;
constexpr int kLegendHeight = 185;

std::string ColumnHeader(const HeatmapColumn& column, int x) {
  std::string label = EscapeHtml(Ellipsize(column.name, 30));
  return fmt::format(
      "<g transform=\"translate({},{}) rotate(-40)\"><text class=\"col{}\">{}<title>{} ({}), median "
      "β {:.3f}</title></text></g>\n",
      x + kCellWidth / 2, kHeaderHeight - 6, column.from_finding ? " finding" : "", label, EscapeHtml(column.name),
      CategoryName(column.category), column.median_beta);
}

std::string Cell(const HeatmapRow& row, const HeatmapColumn& column, const HeatmapCell& cell, int x, int y,
                 int height) {
  double scale = column.scale;
  std::string who = row.worker_count > 1
                        ? fmt::format("{} ({} workers; most extreme: rank {})", row.label, row.worker_count, cell.rank)
                        : row.label;
  std::string out = fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} · {}: β {:.3f}, {:+.3f} vs "
      "peer median</title></rect>",
      x, y, kCellWidth - 1, height - 1, DivergingColor(cell.deviation / scale), EscapeHtml(who),
      EscapeHtml(column.name), cell.beta, cell.deviation);
  if (std::fabs(cell.deviation) >= 0.3 * scale && std::fabs(cell.deviation) >= 0.005 && height >= 12) {
    out += fmt::format("<text class=\"cell{}\" x=\"{}\" y=\"{}\">{:+.1f}</text>",
                       std::fabs(cell.deviation) >= 0.6 * scale ? " strong" : "", x + kCellWidth / 2,
                       y + height / 2 + 3, cell.deviation * 100);
  }
  return out + "\n";
}

std::string Legend(int x, int y) {
  std::string out = fmt::format("<g class=\"legend\" transform=\"translate({},{})\">", x, y);
  out += "<text x=\"0\" y=\"-8\">β − peer median</text>";
  constexpr int kSteps = 20;
  constexpr int kStepHeight = 7;
  for (int i = 0; i < kSteps; ++i) {
    double t = 1.0 - 2.0 * (i + 0.5) / kSteps;
    out += fmt::format("<rect x=\"0\" y=\"{}\" width=\"14\" height=\"{}\" fill=\"{}\"/>", i * kStepHeight, kStepHeight,
                       DivergingColor(t));
  }
  out += "<text x=\"20\" y=\"8\">above peers</text>";
  out += fmt::format("<text x=\"20\" y=\"{}\">as peers</text>", kSteps * kStepHeight / 2 + 4);
  out += fmt::format("<text x=\"20\" y=\"{}\">below peers</text>", kSteps * kStepHeight);
  out += fmt::format("<text x=\"0\" y=\"{}\">per column; numbers:</text>", kSteps * kStepHeight + 16);
  out += fmt::format("<text x=\"0\" y=\"{}\">percentage points</text>", kSteps * kStepHeight + 29);
  return out + "</g>\n";
}

}  // namespace

std::string RenderHeatmapSvg(const Heatmap& map) {
  if (map.columns.empty() || map.rows.empty()) return "";
  int row_height = map.rows.size() > 40 ? 12 : 18;
  int width = kLabelWidth + static_cast<int>(map.columns.size()) * kCellWidth + kLegendWidth;
  int height = kHeaderHeight + std::max(static_cast<int>(map.rows.size()) * row_height, kLegendHeight) + 10;
  std::string out = fmt::format(
      "<svg class=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"workers by function heat map\">\n",
      width, height, width, height);
  for (size_t c = 0; c < map.columns.size(); ++c) {
    out += ColumnHeader(map.columns[c], kLabelWidth + static_cast<int>(c) * kCellWidth);
  }
  for (size_t r = 0; r < map.rows.size(); ++r) {
    const HeatmapRow& row = map.rows[r];
    int y = kHeaderHeight + static_cast<int>(r) * row_height;
    out += fmt::format("<text class=\"row{}\" x=\"{}\" y=\"{}\">{}{}</text>\n", row.suspect ? " suspect" : "",
                       kLabelWidth - 6, y + row_height / 2 + 4, row.suspect ? "▶ " : "", EscapeHtml(row.label));
    for (size_t c = 0; c < map.columns.size(); ++c) {
      out += Cell(row, map.columns[c], row.cells[c], kLabelWidth + static_cast<int>(c) * kCellWidth, y, row_height);
    }
    if (row.suspect && row.worker_count == 1) {
      out += fmt::format("<rect class=\"suspect-outline\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n",
                         kLabelWidth - 1, y - 1, static_cast<int>(map.columns.size()) * kCellWidth + 1, row_height + 1);
    }
  }
  out += Legend(kLabelWidth + static_cast<int>(map.columns.size()) * kCellWidth + 16, kHeaderHeight + 10);
  return out + "</svg>\n";
}

}  // namespace eroica
