// Small helpers shared by the report's hand-drawn SVG charts: number formatting, axis ticks,
// colours. Charts are drawn by us so the report opens without network access or JavaScript.
#pragma once

#include <string>
#include <vector>

namespace eroica {

// Coordinates with one decimal, no trailing zeros ("12", "12.5").
std::string SvgNumber(double value);

// About `count` round tick values covering [low, high] (1, 2, 5 × 10^k steps).
std::vector<double> NiceTicks(double low, double high, int count);

// A tick label: "0.25", "40", "1.5k".
std::string TickLabel(double value);

// Diverging colour for t in [-1, 1]: blue (below the peers) – near-white – red (above).
std::string DivergingColor(double t);

// Maps [domain_low, domain_high] linearly onto [range_low, range_high].
struct LinearScale {
  double domain_low = 0, domain_high = 1, range_low = 0, range_high = 1;
  double operator()(double v) const {
    double span = domain_high - domain_low;
    double t = span == 0 ? 0.5 : (v - domain_low) / span;
    return range_low + t * (range_high - range_low);
  }
};

}  // namespace eroica
