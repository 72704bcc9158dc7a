"""The GPU check's results: one `Check` per thing verified, each with the value it measured,
the one-screen summary, and the exit status (nonzero when a required check failed)."""

import dataclasses
from typing import Any, Dict, List

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
WIDTH = 118


@dataclasses.dataclass
class Check:
    name: str
    status: str  # PASS, FAIL or SKIP
    measured: str  # what was measured (or, for SKIP, why nothing was)
    required: bool = True
    detail: Dict[str, Any] = dataclasses.field(default_factory=dict)


def verdict(ok, name, measured, required=True, **detail):
    return Check(name, PASS if ok else FAIL, measured, required, detail)


def skipped(name, why, required=False, **detail):
    return Check(name, SKIP, why, required, detail)


def failed_required(checks: List[Check]) -> List[Check]:
    return [c for c in checks if c.required and c.status == FAIL]


def exit_status(checks: List[Check]) -> int:
    return 1 if failed_required(checks) else 0


def _clip(text, width):
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def summary_lines(title: str, facts: List[str], checks: List[Check], footer: List[str]) -> List[str]:
    """One screen: a title, a few facts, one line per check, the totals and where files are."""
    lines = [_clip(title, WIDTH)] + ["  " + _clip(f, WIDTH - 2) for f in facts]
    name_width = max([len(c.name) for c in checks] + [10])
    for c in checks:
        mark = "" if c.required or c.status == SKIP else " (info)"
        head = "%-4s  %-*s  " % (c.status, name_width, c.name)
        lines.append(head + _clip(c.measured + mark, WIDTH - len(head)))
    counts = {s: sum(1 for c in checks if c.status == s) for s in (PASS, FAIL, SKIP)}
    bad = failed_required(checks)
    lines.append("%d passed, %d failed, %d skipped" % (counts[PASS], counts[FAIL], counts[SKIP]))
    lines.append(_clip("RESULT: " + ("FAIL (required: %s)" % ", ".join(c.name for c in bad) if bad else "PASS"),
                       WIDTH))
    lines += [_clip(f, WIDTH) for f in footer]
    return lines


def to_json(checks: List[Check]) -> List[Dict[str, Any]]:
    return [dataclasses.asdict(c) for c in checks]
