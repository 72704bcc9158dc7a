"""Golden tests: each case's traces in, the CLI's exact outputs out, compared with the expected
files checked in beside them (tests/golden/cases/<case>/expected/). Any difference fails and is
shown as a diff.

  golden.py --eroica build/eroica            # compare (what `make test` runs)
  golden.py --eroica build/eroica --bless    # rewrite the expected files; review `git diff`

Per case: every trace's pattern as `show --format json` (or, when it cannot be summarized, the
error), and the case folder's `diagnose --format json` and text verdict. Commands run inside the
case folder with relative paths, so outputs do not depend on where the repository lies.
"""
import argparse
import difflib
import pathlib
import subprocess
import sys
import tempfile

CASES = pathlib.Path(__file__).resolve().parent / "cases"
TRACE_SUFFIXES = (".json", ".json.gz")


def run(eroica, args, cwd):
    p = subprocess.run([eroica, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def traces(case):
    return sorted(f for f in case.iterdir() if f.is_file() and f.name.endswith(TRACE_SUFFIXES))


def outputs(eroica, case):
    """{expected file name: text} for one case."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for trace in traces(case):
            pattern = pathlib.Path(tmp) / (trace.name + ".pattern")
            rc, stdout, stderr = run(eroica, ["summarize", trace.name, "-o", str(pattern)], case)
            if rc != 0:
                out[f"{trace.name}.summarize.txt"] = f"exit {rc}\n{stderr}"
                continue
            rc, stdout, stderr = run(eroica, ["show", str(pattern), "--format", "json"], case)
            out[f"{trace.name}.show.json"] = stdout if rc == 0 else f"exit {rc}\n{stderr}"
    rc, stdout, stderr = run(eroica, ["diagnose", ".", "--format", "json"], case)
    out["diagnose.json"] = f"{stdout}" if rc == 0 else f"exit {rc}\n{stderr}"
    rc, stdout, stderr = run(eroica, ["diagnose", "."], case)
    out["diagnose.txt"] = f"exit {rc}\n--- stdout\n{stdout}--- stderr\n{stderr}"
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eroica", required=True)
    parser.add_argument("--bless", action="store_true", help="rewrite the expected outputs")
    args = parser.parse_args()
    eroica = str(pathlib.Path(args.eroica).resolve())
    cases = sorted(c for c in CASES.iterdir() if c.is_dir())
    failed, compared = [], 0
    for case in cases:
        expected_dir = case / "expected"
        actual = outputs(eroica, case)
        if args.bless:
            expected_dir.mkdir(exist_ok=True)
            for stale in expected_dir.iterdir():
                if stale.name not in actual:
                    stale.unlink()
            for name, text in actual.items():
                (expected_dir / name).write_text(text)
            continue
        names = sorted(set(actual) | {f.name for f in expected_dir.glob("*")} if expected_dir.is_dir() else set(actual))
        for name in names:
            compared += 1
            path = expected_dir / name
            want = path.read_text() if path.is_file() else None
            got = actual.get(name)
            if want == got:
                continue
            failed.append(f"{case.name}/{name}")
            if want is None or got is None:
                print(f"FAIL {case.name}/{name}: {'not expected' if want is None else 'not produced'}")
                continue
            print(f"FAIL {case.name}/{name}:")
            sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                                       "expected", "actual", n=2))
    if args.bless:
        print(f"blessed {len(cases)} cases; review them with `git diff tests/golden`")
        return 0
    print(f"golden: {len(cases)} cases")
    print(f"{compared - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
