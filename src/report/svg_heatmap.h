// Draws a Heatmap (heatmap.h) as inline SVG: one row per worker or band, one column per
// function, colour = β deviation from the peer median; suspects outlined. Every cell has a
// <title> tooltip with its numbers. All trace-derived text is escaped.
#pragma once

#include <string>

#include "report/heatmap.h"

namespace eroica {

std::string RenderHeatmapSvg(const Heatmap& heatmap);

}  // namespace eroica
