// A figure for a JSON document: rounded to `digits` decimals, and 0 when not finite (JSON has no
// NaN), so documents stay small and comparable.
#pragma once

#include <cmath>

namespace eroica {

inline double RoundForJson(double value, int digits) {
  if (!std::isfinite(value)) return 0;
  double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

}  // namespace eroica
