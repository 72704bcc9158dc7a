#include "report/svg_util.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace eroica {

std::string SvgNumber(double value) {
  if (!std::isfinite(value)) return "0";
  double rounded = std::round(value * 10) / 10;
  if (rounded == 0) return "0";
  if (rounded == std::floor(rounded)) return fmt::format("{}", static_cast<long long>(rounded));
  return fmt::format("{:.1f}", rounded);
}

std::vector<double> NiceTicks(double low, double high, int count) {
  if (!std::isfinite(low) || !std::isfinite(high) || count < 1) return {};
  if (high <= low) high = low + 1;
  double raw = (high - low) / count;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(low / step) * step; t <= high + step * 1e-9 && ticks.size() < 50; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
  }
  return ticks;
}

std::string TickLabel(double value) {
  double a = std::fabs(value);
  if (a >= 1e4) return fmt::format("{:.0f}k", value / 1e3);
  if (a >= 1e3) return fmt::format("{:.1f}k", value / 1e3);
  if (a >= 10 || a == 0) return fmt::format("{:.0f}", value);
  if (a >= 1) return fmt::format("{:.1f}", value);
  if (a >= 0.1) return fmt::format("{:.2f}", value);
  return fmt::format("{:.3f}", value);
}

std::string DivergingColor(double t) {
  if (!std::isfinite(t)) t = 0;
  t = std::clamp(t, -1.0, 1.0);
  // Endpoints from ColorBrewer RdBu: #2166ac (blue), #f7f7f7, #b2182b (red).
  int r0 = 0xf7, g0 = 0xf7, b0 = 0xf7;
  int r1 = t > 0 ? 0xb2 : 0x21, g1 = t > 0 ? 0x18 : 0x66, b1 = t > 0 ? 0x2b : 0xac;
  double a = std::fabs(t);
  auto mix = [a](int from, int to) { return static_cast<int>(std::lround(from + (to - from) * a)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(r0, r1), mix(g0, g1), mix(b0, b1));
}

}  // namespace eroica
