"""eroica: find why a distributed PyTorch training job got slow, while it runs.

Importing this package is cheap and never imports torch. `import eroica.auto` installs the
iteration hooks in the current process; `python -m eroica run -- CMD` installs them in every
Python process CMD starts.
"""

from ._version import __version__  # noqa: F401
