"""Installs eroica in this process: one Runtime, hooks patched as torch loads.

Used by `import eroica.auto` and by the sitecustomize of `python -m eroica run`. Never
imports torch: the hooks go in when `torch.utils.data` / `torch.optim` finish importing.
"""

import os
from typing import Optional

from . import config, hooks, importhook, log

_runtime = None


def runtime():
    return _runtime


def enable(cfg: Optional[config.Config] = None) -> bool:
    """Returns True when eroica is (now or already) active in this process."""
    global _runtime
    if _runtime is not None:
        return True
    cfg = cfg or config.load()
    log.configure(cfg.verbose)
    if cfg.disable:
        return False
    from .runtime import Runtime

    _runtime = Runtime(cfg)
    hooks.attach(_runtime)
    importhook.when_imported("torch.utils.data", lambda _: hooks.patch_dataloader())
    importhook.when_imported("torch.optim", lambda _: hooks.patch_optimizer())
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork)
    log.debug("enabled")
    return True


def _after_fork() -> None:
    """A forked child starts with a fresh runtime: the parent's threads did not survive."""
    global _runtime
    if _runtime is None or hooks.listener() is not _runtime:
        return
    try:
        log.reset_after_fork()
        from .runtime import Runtime

        _runtime = Runtime(_runtime.cfg)
        hooks.attach(_runtime)
    except Exception as e:
        hooks.disable(e)
