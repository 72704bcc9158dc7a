"""Single-process probes of eroica's hooks on this machine's torch, run under `eroica run`
(the sitecustomize path users get). Each part prints nothing and writes one JSON file:

  boundaries  which torch method was patched (`_patch_step_function` on 2.x,
              `_hook_for_profile` on 1.13), that the optimizer class's step is eroica's wrapper
              outside torch's, one boundary per step (also with a subclass calling
              super().step() and with a second optimizer), and that no boundary falls inside
              an `Optimizer.step#...` profiler range
  compiled    the same count with `torch.compile` on the model, and on a function that steps
  idle        the idle cost: the same training loop with hooks in and out, alternating blocks

Usage: python hook_probe.py PART --device cpu|cuda --out FILE [--steps N] [--block N]
"""

import argparse
import gc
import json
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
BOUNDARY_RANGE = "eroica_probe::boundary"


def eroica_runtime():
    import eroica.bootstrap

    rt = eroica.bootstrap.runtime()
    if rt is None:
        raise RuntimeError("eroica is not active in this process (not started under eroica run?)")
    return rt


def small_model(device):
    sys.path.insert(0, HERE)
    import torch
    from transformer_job import DEFAULTS, build_model

    opts = dict(DEFAULTS)
    model = build_model(opts).to(torch.device(device))
    return model, opts


def batches(opts, device, n):
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    tokens = torch.randint(0, opts["vocab"], (n * opts["batch"], opts["seq"] + 1))
    for (batch,) in DataLoader(TensorDataset(tokens), batch_size=opts["batch"]):
        yield batch.to(device)


def train_steps(model, opt, opts, device, n, step=None):
    import torch

    loss_fn = torch.nn.CrossEntropyLoss()
    for batch in batches(opts, device, n):
        logits = model(batch[:, :-1])
        loss = loss_fn(logits.reshape(-1, opts["vocab"]), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        (step or opt.step)()
        loss.item()


def counted(rt, fn):
    before = rt.iteration
    fn()
    return rt.iteration - before


def subclass_steps(model, opts, device, n):
    import torch

    class ClippedAdamW(torch.optim.AdamW):
        def step(self, closure=None):
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            return super().step(closure)

    train_steps(model, ClippedAdamW(model.parameters(), lr=1e-3), opts, device, n)


def patched_points():
    from eroica import hooks

    return sorted("%s.%s" % (getattr(owner, "__name__", owner), name)
                  for owner, name, _, _ in hooks._patches)


def boundaries_inside_optimizer_ranges(prof):
    """Boundary marks that lie inside an Optimizer.step# range (must be 0) and how many of each."""
    events = list(prof.events())
    marks = [e.time_range for e in events if e.name == BOUNDARY_RANGE]
    steps = [e.time_range for e in events if e.name.startswith("Optimizer.step#")]
    inside = sum(1 for m in marks for s in steps if s.start <= m.start and m.end <= s.end)
    return {"boundary_marks": len(marks), "optimizer_ranges": len(steps),
            "marks_inside_optimizer_ranges": inside,
            "optimizer_range_names": sorted({e.name for e in events
                                             if e.name.startswith("Optimizer.step#")})}


def probe_boundaries(args):
    import torch
    from torch.autograd.profiler import record_function
    from torch.optim.optimizer import Optimizer

    from eroica import hooks

    rt = eroica_runtime()
    hook_name = next((n for n in ("_patch_step_function", "_hook_for_profile")
                      if n in Optimizer.__dict__), "__init__")
    model, opts = small_model(args.device)
    # First, while no optimizer paces the iterations: a subclass whose step calls
    # super().step() runs two of our wrappers and must mark one boundary per step.
    out = {"subclass_boundaries": counted(rt, lambda: subclass_steps(model, opts, args.device, 5))}
    gc.collect()  # that optimizer is gone: the next one to step paces the iterations
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = type(opt).__dict__.get("step")
    out.update({"torch": torch.__version__, "device": args.device, "expected_patch_point": hook_name,
                "patched": patched_points(),
                "step_is_eroica_wrapper": step in hooks._wrappers,
                "torch_marks_step_hooked": bool(getattr(step, "hooked", False)),
                "wrapped_is_torch_profile_wrapper": bool(getattr(getattr(step, "__wrapped__", None),
                                                                 "hooked", False)) or hook_name == "__init__",
                "has_compile": hasattr(torch, "compile")})
    out["steps"] = args.steps
    out["boundaries"] = counted(rt, lambda: train_steps(model, opt, opts, args.device, args.steps))
    second = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1, device=args.device))], lr=0.1)

    def two_optimizers():
        train_steps(model, opt, opts, args.device, 5, step=lambda: (opt.step(), second.step()))

    out["two_optimizer_boundaries"] = counted(rt, two_optimizers)
    original = rt.on_step_end

    def marked(optimizer):
        with record_function(BOUNDARY_RANGE):
            pass
        return original(optimizer)

    rt.on_step_end = marked
    activities = [torch.profiler.ProfilerActivity.CPU]
    if args.device.startswith("cuda"):
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        train_steps(model, opt, opts, args.device, 3)
    rt.on_step_end = original
    out.update(boundaries_inside_optimizer_ranges(prof))
    return out


def probe_compiled(args):
    import torch

    rt = eroica_runtime()
    out = {"torch": torch.__version__, "device": args.device, "steps": args.steps}
    model, opts = small_model(args.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    started = time.perf_counter()
    compiled = torch.compile(model)
    train_steps(compiled, opt, opts, args.device, 1)
    out["model_compile_s"] = round(time.perf_counter() - started, 2)
    out["compiled_model_boundaries"] = counted(
        rt, lambda: train_steps(compiled, opt, opts, args.device, args.steps))

    @torch.compile
    def compiled_step():
        opt.step()

    started = time.perf_counter()
    try:
        train_steps(model, opt, opts, args.device, 1, step=compiled_step)
        out["step_compile_s"] = round(time.perf_counter() - started, 2)
        out["compiled_step_boundaries"] = counted(
            rt, lambda: train_steps(model, opt, opts, args.device, args.steps, step=compiled_step))
    except Exception as e:  # compiling the step is the newer path; report, don't hide the rest
        out["compiled_step_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
    return out


def probe_idle(args):
    """Hooks in for a block, out for the next; the median of paired block ratios (on/off)."""
    import torch

    from eroica import hooks

    rt = eroica_runtime()
    model, opts = small_model(args.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    train_steps(model, opt, opts, args.device, 10)  # warm-up: allocator, kernels, autotuning
    blocks = []
    n = args.blocks * args.block
    it = batches(opts, args.device, n + 1)
    for b in range(args.blocks):
        on = b % 2 == 0
        if on and not hooks.installed():
            hooks.install(rt)
        elif not on and hooks.installed():
            hooks.uninstall()
        times = []
        for _ in range(args.block):
            started = time.perf_counter()
            batch = next(it)
            logits = model(batch[:, :-1])
            loss = loss_fn(logits.reshape(-1, opts["vocab"]), batch[:, 1:].reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss.item()
            times.append(time.perf_counter() - started)
        blocks.append((on, times[1:]))  # the first iteration of a block absorbs the switch
    if not hooks.installed():
        hooks.install(rt)
    ratios = [statistics.median(blocks[i][1]) / statistics.median(blocks[i + 1][1])
              for i in range(0, len(blocks) - 1, 2)]
    on = [t for is_on, ts in blocks if is_on for t in ts]
    off = [t for is_on, ts in blocks if not is_on for t in ts]
    return {"device": args.device, "block": args.block, "blocks": args.blocks,
            "ratio": round(statistics.median(ratios), 4), "pair_ratios": [round(r, 4) for r in ratios],
            "median_on_ms": round(statistics.median(on) * 1e3, 4),
            "median_off_ms": round(statistics.median(off) * 1e3, 4)}


PARTS = {"boundaries": probe_boundaries, "compiled": probe_compiled, "idle": probe_idle}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=sorted(PARTS))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=12)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    try:
        doc = PARTS[args.part](args)
    except Exception as e:
        doc = {"error": "%s: %s" % (type(e).__name__, e), "traceback": traceback.format_exc()[-2000:]}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0 if "error" not in doc else 1


if __name__ == "__main__":
    sys.exit(main())
