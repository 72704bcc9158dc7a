# The one place the version is written. CMake reads this line for project(VERSION), so the
# .deb, `eroica --version` and the wheel (setuptools reads it as eroica._version.__version__)
# all carry the same number; keep it a plain "X.Y.Z" string.
__version__ = "0.1.0"
