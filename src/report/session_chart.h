// The online detector's view: the detecting rank's iteration times before the trigger, with
// the trigger, the detector's baseline and threshold, and the profiled window marked.
#pragma once

#include "report/session_info.h"
#include "report/svg_line_chart.h"

namespace eroica {

// Empty series when the session carries no iteration times.
LineChart IterationTimeChart(const SessionInfo& session);

}  // namespace eroica
