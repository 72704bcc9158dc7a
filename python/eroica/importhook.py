"""Runs a callback right after a given module has been imported, without importing it.

This is what keeps `python -m eroica run` cheap for the many Python processes of a job that
never touch torch: the hooks are installed only when `torch.optim` / `torch.utils.data` finish
loading. A meta path finder answers only for the watched names (one dict lookup per import
otherwise) and wraps the real loader's `exec_module`.
"""

import importlib.abc
import sys
import threading
from typing import Callable, Dict, List

_lock = threading.RLock()
_callbacks: Dict[str, List[Callable]] = {}


def _run(callbacks: List[Callable], module) -> None:
    for callback in callbacks:
        try:
            callback(module)
        except Exception as e:  # a failed hook must not fail the user's import
            from . import hooks

            hooks.disable(e)


class _Loader(importlib.abc.Loader):
    def __init__(self, real, callbacks: List[Callable]):
        self._real = real
        self._callbacks = callbacks

    def create_module(self, spec):
        return self._real.create_module(spec)

    def exec_module(self, module):
        # The module keeps the real loader: nothing downstream sees this wrapper.
        module.__loader__ = self._real
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._real
        self._real.exec_module(module)
        _run(self._callbacks, module)

    def __getattr__(self, name):
        return getattr(self._real, name)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _callbacks:
            return None
        with _lock:
            callbacks = _callbacks.pop(fullname, None)
            if not _callbacks:
                _remove_finder()
        if not callbacks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec  # a loader we cannot wrap: the module loads, unhooked
        spec.loader = _Loader(spec.loader, callbacks)
        return spec


_finder = _Finder()


def _remove_finder() -> None:
    try:
        sys.meta_path.remove(_finder)
    except ValueError:
        pass


def when_imported(name: str, callback: Callable) -> None:
    """Calls `callback(module)` once `name` is imported (now, if it already is)."""
    module = sys.modules.get(name)
    if module is not None:
        _run([callback], module)
        return
    with _lock:
        _callbacks.setdefault(name, []).append(callback)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
