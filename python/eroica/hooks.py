"""Iteration hooks: `_BaseDataLoaderIter.__next__` and `Optimizer.step`, patched in place (and
the DataLoader workers' process target, for their stack samples: loader_workers.py).

The wrappers call a *listener* (the per-process Runtime) and never let an error of ours reach
user code: any exception raised by the listener disables eroica in this process with one
warning line, after which every wrapper is a plain pass-through. Exceptions raised by user code
(the dataset, the collate function, the optimizer) propagate unchanged: the wrappers have no
`except` around the wrapped call.

Optimizer steps. torch wraps `type(self).step` once per class for its own profiler label
(`_hook_for_profile` in 1.13, `_patch_step_function` in 2.x), from `__init__` and
`__setstate__`. We patch that method so our wrapper lands *outside* torch's: the iteration
boundary (where the next `ProfilerStep#N` range opens) must not fall inside the
`Optimizer.step#...` range. A subclass `step` that calls `super().step()` runs two wrappers;
only the outermost call marks a boundary.
"""

import functools
import sys
import time
import types
from typing import Any, Callable, List, Tuple

from . import loader_workers, log

_perf_ns = time.perf_counter_ns

_listener: Any = None  # the Runtime, or None: pass-through
_step_depth = 0
_wrappers: set = set()  # every wrapper function we made (identity marks ours)
_patches: List[Tuple[Any, str, Any, Any]] = []  # (owner, name, previous or _ABSENT, ours)
_ABSENT = object()


def attach(listener: Any) -> None:
    """Routes hook events to `listener` (which must provide on_attach, on_batch, on_step_end)."""
    global _listener
    _listener = listener
    listener.on_attach()


def detach() -> None:
    global _listener
    _listener = None


def listener() -> Any:
    return _listener


def disable(exc: BaseException) -> None:
    """Turns eroica off in this process after an internal error; says so once."""
    global _listener
    current, _listener = _listener, None
    log.once("disabled", "internal error, eroica disabled in this process (pid %d): %s: %s"
             % (_pid(), type(exc).__name__, exc))
    if current is not None:
        try:
            current.on_disabled()
        except Exception:
            pass


def install(listener_: Any) -> None:
    """Patches whatever of torch.optim / torch.utils.data is already imported and attaches."""
    if "torch.utils.data" in sys.modules:
        patch_dataloader()
    if "torch.optim" in sys.modules:
        patch_optimizer()
    attach(listener_)
    if "torch.utils.data" in sys.modules:
        _patch_worker_loop()  # needs the listener's folder


def uninstall() -> None:
    """Restores every patched attribute (where nobody patched over us) and detaches."""
    detach()
    while _patches:
        owner, name, previous, ours = _patches.pop()
        if owner.__dict__.get(name) is not ours:
            continue  # someone wrapped our wrapper; ours stays, as a pass-through
        if previous is _ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, previous)


def installed() -> bool:
    return bool(_patches)


def _set(owner: Any, name: str, value: Any) -> None:
    _patches.append((owner, name, owner.__dict__.get(name, _ABSENT), value))
    setattr(owner, name, value)


def _is_patched(owner: Any, name: str) -> bool:
    return any(o is owner and n == name for o, n, _, _ in _patches)


# ---- DataLoader -------------------------------------------------------------------------------

def _make_next_wrapper(inner: Callable) -> Callable:
    @functools.wraps(inner)
    def __next__(self):
        target = _listener
        if target is None:
            return inner(self)
        start_ns = _perf_ns()
        try:
            batch = inner(self)
        except StopIteration:
            try:
                target.on_epoch_end()
            except Exception as e:
                disable(e)
            raise
        try:
            target.on_batch(self, start_ns)
        except Exception as e:
            disable(e)
        return batch

    _wrappers.add(__next__)
    return __next__


def patch_dataloader() -> None:
    from torch.utils.data import dataloader

    cls = dataloader._BaseDataLoaderIter
    if not _is_patched(cls, "__next__"):
        _set(cls, "__next__", _make_next_wrapper(cls.__dict__["__next__"]))
    _patch_worker_loop()


def _patch_worker_loop() -> None:
    """DataLoader worker processes start through loader_workers, which samples their stacks
    during a capture window (torch looks `_worker_loop` up when it starts its workers). Only
    with a listener whose stack sampling is on: its folder holds the workers' control page."""
    cfg = getattr(_listener, "cfg", None)
    if cfg is None or not getattr(cfg, "stack_hz", 0) > 0:
        return
    try:
        from torch.utils.data._utils import worker
    except Exception:
        return  # a torch without it: the workers are not sampled
    if _is_patched(worker, "_worker_loop") or not callable(getattr(worker, "_worker_loop", None)):
        return
    target = loader_workers.worker_target(worker._worker_loop, cfg.local_dir or cfg.dir)
    if target is not None:
        _set(worker, "_worker_loop", target)


# ---- Optimizer --------------------------------------------------------------------------------

def _make_step_wrapper(inner: Callable) -> Callable:
    @functools.wraps(inner)
    def step(self, *args, **kwargs):
        global _step_depth
        if _listener is None:
            return inner(self, *args, **kwargs)
        _step_depth += 1
        try:
            out = inner(self, *args, **kwargs)
        finally:
            _step_depth -= 1
        if _step_depth == 0:
            target = _listener
            if target is not None:
                try:
                    target.on_step_end(self)
                except Exception as e:
                    disable(e)
        return out

    _wrappers.add(step)
    return step


def wrap_optimizer_class(cls: type) -> None:
    """Makes our wrapper the outermost `step` of `cls` (idempotent)."""
    current = getattr(cls, "step", None)
    if not isinstance(current, types.FunctionType) or current in _wrappers:
        return
    _set(cls, "step", _make_step_wrapper(current))


def _subclasses(cls: type) -> List[type]:
    out, todo = [], [cls]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in out:
                out.append(sub)
                todo.append(sub)
    return out


def patch_optimizer() -> None:
    from torch.optim.optimizer import Optimizer

    for name in ("_patch_step_function", "_hook_for_profile", "__init__"):
        if isinstance(Optimizer.__dict__.get(name), types.FunctionType):
            break
    if _is_patched(Optimizer, name):
        return
    torch_hook = Optimizer.__dict__[name]

    @functools.wraps(torch_hook)
    def patched(self, *args, **kwargs):
        result = torch_hook(self, *args, **kwargs)
        try:
            wrap_optimizer_class(type(self))
        except Exception as e:
            disable(e)
        return result

    _set(Optimizer, name, patched)
    # Classes torch already hooked have instances created before we were installed.
    for cls in _subclasses(Optimizer):
        if getattr(cls.__dict__.get("step"), "hooked", False):
            wrap_optimizer_class(cls)


def _pid() -> int:
    import os

    return os.getpid()
