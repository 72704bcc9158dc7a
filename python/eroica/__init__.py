"""eroica: find why a distributed PyTorch training job got slow, while it runs.

Importing this package is cheap and never imports torch. `import eroica.auto` installs the
iteration hooks in the current process; `python -m eroica run -- CMD` installs them in every
Python process CMD starts.
"""

from ._version import __version__  # noqa: F401


def rebaseline() -> None:
    """Tells eroica that the job's present speed is intended (a new model, image or dataset):
    the next baseline is taken once iteration times settle, and later sessions compare with
    it. Call it from the training process; a no-op where eroica is not attached. Never raises."""
    try:
        from . import hooks

        listener = hooks.listener()
        if listener is not None and hasattr(listener, "request_baseline"):
            listener.request_baseline()
    except Exception:
        pass
