"""The hook checks: the torch hook points (hook_probe.py under `eroica run`), the package's hook
unit tests on this torch, and the idle cost of the hooks on a training loop."""

import os

from checks import skipped, verdict
from procs import HERE, REPO, clean_env, eroica_env, eroica_run_cmd, read_json, run_logged, tail


def probe(run, part, timeout_s, **flags):
    out = os.path.join(run.artifacts, "hooks-%s.json" % part)
    eroica_dir = os.path.join(run.work, "probe-" + part)
    cmd = [run.python, os.path.join(HERE, "hook_probe.py"), part, "--device", run.device, "--out", out]
    for key, value in flags.items():
        cmd += ["--" + key, str(value)]
    env = eroica_env(run, EROICA_DIR=eroica_dir, EROICA_THRESHOLD=1000)
    code, seconds = run_logged(eroica_run_cmd(run, eroica_dir, cmd),
                               os.path.join(run.artifacts, "hooks-%s.log" % part), env, timeout_s)
    if os.path.exists(out):
        doc = read_json(out)
    else:
        doc = {"error": "no result (exit %d): %s" % (code, tail(os.path.join(run.artifacts, "hooks-%s.log" % part)))}
    doc["seconds"] = seconds
    return doc


def check_boundaries(run):
    doc = probe(run, "boundaries", 180, steps=20)
    if "error" in doc:
        run.add(verdict(False, "hooks.patch_point", "boundaries probe failed: " + doc["error"]))
        return doc
    point = "Optimizer." + doc["expected_patch_point"]
    ok = point in doc["patched"] and doc["step_is_eroica_wrapper"] and doc["torch_marks_step_hooked"] \
        and doc["wrapped_is_torch_profile_wrapper"]
    run.add(verdict(ok, "hooks.patch_point", "torch %s: %s patched=%s; AdamW.step is eroica's wrapper=%s, "
                    "around torch's=%s, torch sees it hooked=%s" % (
                        doc["torch"], point, point in doc["patched"], doc["step_is_eroica_wrapper"],
                        doc["wrapped_is_torch_profile_wrapper"], doc["torch_marks_step_hooked"])))
    ok = doc["boundaries"] == doc["steps"] and doc["subclass_boundaries"] == 5 \
        and doc["two_optimizer_boundaries"] == 5
    run.add(verdict(ok, "hooks.boundaries", "%d boundaries for %d steps (eager); subclass calling "
                    "super().step(): %d for 5; two optimizers: %d for 5" % (
                        doc["boundaries"], doc["steps"], doc["subclass_boundaries"],
                        doc["two_optimizer_boundaries"])))
    ok = doc["boundary_marks"] == 3 and doc["optimizer_ranges"] >= 3 and doc["marks_inside_optimizer_ranges"] == 0
    run.add(verdict(ok, "hooks.outside_torch_range", "%d of %d boundaries inside %d %s ranges" % (
        doc["marks_inside_optimizer_ranges"], doc["boundary_marks"], doc["optimizer_ranges"],
        "/".join(doc["optimizer_range_names"]) or "Optimizer.step#")))
    return doc


def check_compiled(run, boundaries_doc):
    if not boundaries_doc or not boundaries_doc.get("has_compile"):
        torch_version = (boundaries_doc or {}).get("torch", run.facts.get("torch"))
        return run.add(skipped("hooks.compiled", "torch %s has no torch.compile" % torch_version))
    limit = min(240, run.left_s())  # the last step: it gets what the budget has left
    if limit < 60:
        return run.add(skipped("hooks.compiled", "not enough time left (%.0f s)" % run.left_s()))
    doc = probe(run, "compiled", int(limit), steps=10)
    if "error" in doc:
        return run.add(verdict(False, "hooks.compiled", doc["error"][:200], required=False))
    step = ("compiled step: %d for %d (compile %.1f s)" % (doc["compiled_step_boundaries"], doc["steps"],
                                                          doc["step_compile_s"])
            if "compiled_step_boundaries" in doc else "compiled step failed: " + doc["compiled_step_error"])
    ok = doc["compiled_model_boundaries"] == doc["steps"] and doc.get("compiled_step_boundaries") == doc["steps"]
    return run.add(verdict(ok, "hooks.compiled", "compiled model: %d boundaries for %d steps (compile "
                           "%.1f s); %s" % (doc["compiled_model_boundaries"], doc["steps"],
                                            doc["model_compile_s"], step), required=False))


def check_hook_unit_tests(run):
    tests = [os.path.join(REPO, "python", "tests", t) for t in ("test_hooks.py", "test_cost.py")]
    log = os.path.join(run.artifacts, "hooks-pytest.log")
    env = clean_env(PYTHONPATH=os.path.join(REPO, "python"))
    code, seconds = run_logged([run.python, "-m", "pytest", "-q", "-p", "no:cacheprovider"] + tests,
                               log, env, 180)
    last = tail(log, 1)
    if "No module named pytest" in tail(log, 3):
        return run.add(skipped("hooks.unit_tests", "no pytest for %s" % run.python))
    return run.add(verdict(code == 0, "hooks.unit_tests", "test_hooks.py + test_cost.py on torch %s: %s "
                           "(%.0f s)" % (run.facts.get("torch"), last, seconds)))


def check_idle_cost(run):
    blocks = 12 if run.cpu else 16
    doc = probe(run, "idle", 240, block=20, blocks=blocks)
    if "error" in doc:
        return run.add(verdict(False, "hooks.idle_cost", "idle probe failed: " + doc["error"][:200],
                               required=not run.cpu))
    bound = 1.10 if run.cpu else 1.03  # a shared 2-core machine moves medians by a few percent
    return run.add(verdict(doc["ratio"] < bound, "hooks.idle_cost",
                           "iteration time hooks on/off: ratio %.4f (median of %d paired blocks; %.3f / "
                           "%.3f ms), bound %.2f" % (doc["ratio"], len(doc["pair_ratios"]),
                                                      doc["median_on_ms"], doc["median_off_ms"], bound),
                           required=not run.cpu))
