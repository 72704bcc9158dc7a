// The report's inline style sheet: one file, no web fonts, no network.
#pragma once

#include <string_view>

namespace eroica {

inline constexpr std::string_view kReportCss = R"css(
:root { --bad: #b2182b; --good: #1b7837; --ink: #1d2330; --muted: #5f6b7a; --line: #d8dde4; --bg: #f6f7f9; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 20px 28px 40px; }
header h1 { font-size: 22px; margin: 0 0 2px; }
header h1 span { color: var(--muted); font-weight: normal; }
.meta { color: var(--muted); margin: 0; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
code { background: #eef1f5; padding: 1px 4px; border-radius: 3px; overflow-wrap: anywhere; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 20px; margin: 16px 0; }
h2 { font-size: 17px; margin: 0 0 8px; }
h3 { font-size: 15px; margin: 0 0 8px; }
.verdict.bad { border-left: 6px solid var(--bad); }
.verdict.good { border-left: 6px solid var(--good); }
.verdict ol { margin: 0; padding-left: 22px; }
.verdict li { margin: 6px 0; font-size: 15px; }
.sentence { font-weight: 600; }
.next { color: var(--muted); display: block; font-size: 13.5px; }
.badge { display: inline-block; font-size: 11px; font-weight: 600; text-transform: uppercase; letter-spacing: .04em;
  padding: 1px 7px; border-radius: 10px; margin-right: 6px; color: #fff; background: var(--bad); vertical-align: 1px; }
.badge.global { background: #8a4b08; }
.badge.hang { background: #5a2a82; }
table.numbers { border-collapse: collapse; margin: 6px 0 10px; }
table.numbers th { text-align: left; font-weight: 500; color: var(--muted); padding: 2px 14px 2px 0; vertical-align: top; }
table.numbers td { padding: 2px 0; }
.evidence { margin: 6px 0 10px; }
figure { margin: 10px 0 4px; }
figcaption { color: var(--muted); font-size: 12.5px; }
.scroll { overflow-x: auto; }
ul.warnings li { margin: 3px 0; }
.ok { color: var(--good); }
footer { color: var(--muted); font-size: 12px; text-align: center; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; font-size: 11px; fill: #333; }
svg .col { font-size: 11px; }
svg .col.finding { fill: var(--bad); font-weight: 700; }
svg .row { text-anchor: end; }
svg .row.suspect { fill: var(--bad); font-weight: 700; }
svg .cell { text-anchor: middle; font-size: 9.5px; fill: #333; }
svg .cell.strong { fill: #fff; font-weight: 600; }
svg .suspect-outline { fill: none; stroke: var(--ink); stroke-width: 1.5; }
svg .plotbg { fill: #fafbfc; stroke: var(--line); }
svg .dot { fill: #8c96a3; fill-opacity: .75; }
svg .dot.suspect { fill: var(--bad); fill-opacity: 1; stroke: #fff; stroke-width: 1.5; }
svg .bar { fill: #9aa4b1; }
svg .whisker { stroke: var(--bad); stroke-width: 2; }
svg .suspectlabel { fill: var(--bad); font-weight: 700; text-anchor: middle; }
svg .reference { stroke: var(--ink); stroke-dasharray: 4 3; }
svg .referencelabel { text-anchor: start; font-size: 10px; fill: var(--muted); }
svg .axis, svg .tick { stroke: #888; }
svg .grid { stroke: #eceff3; }
svg .ticklabel { text-anchor: middle; fill: var(--muted); font-size: 10px; }
svg .ticklabel.y { text-anchor: end; }
svg .axislabel { text-anchor: middle; fill: var(--muted); }
svg .series { fill: none; stroke-width: 2; }
svg .series.times, svg .series.suspect { stroke: var(--bad); }
svg .series.peer { stroke: #4a5563; }
svg .series.peermax { stroke: #a9b2be; stroke-dasharray: 5 3; }
svg .series.baseline { stroke: var(--good); stroke-dasharray: 6 3; stroke-width: 1.5; }
svg .series.threshold { stroke: #d08a00; stroke-dasharray: 3 3; stroke-width: 1.5; }
svg .point { fill: #4a5563; }
svg .point.times, svg .point.suspect { fill: var(--bad); }
svg .point.baseline, svg .point.threshold { display: none; }
svg .marker { stroke: var(--ink); stroke-width: 1.5; }
svg .markerlabel { text-anchor: end; font-weight: 600; }
svg .range { fill: #fde7c6; }
svg .rangelabel { fill: #8a4b08; font-weight: 600; }
svg .legend text, svg .legendlabel { fill: var(--muted); }
)css";

}  // namespace eroica
