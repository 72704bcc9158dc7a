"""Loaded at start by every Python process under `python -m eroica run` (this folder is first
on PYTHONPATH). It runs the sitecustomize it shadows, then enables eroica, which hooks in only
if and when the process imports torch. Whatever happens, the interpreter starts.
"""


def _chain_previous():
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _enable_eroica():
    import os
    import sys

    if os.environ.get("EROICA_DISABLE", "") not in ("", "0", "false", "no"):
        return
    package_dir = os.environ.get("EROICA_PACKAGE_DIR", "")
    if "eroica" not in sys.modules and package_dir:
        # Load the package `eroica run` came from, without adding its folder (a foreign
        # site-packages, maybe) to sys.path.
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "eroica", os.path.join(package_dir, "__init__.py"),
            submodule_search_locations=[package_dir])
        module = importlib.util.module_from_spec(spec)
        sys.modules["eroica"] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules["eroica"]
            raise
    import eroica.bootstrap

    eroica.bootstrap.enable()


def _say(what, error):
    import sys

    try:
        sys.stderr.write("eroica: %s: %s: %s\n" % (what, type(error).__name__, error))
    except Exception:
        pass


try:
    _chain_previous()
except Exception as _error:
    _say("error in the chained sitecustomize", _error)
try:
    _enable_eroica()
except Exception as _error:
    _say("not enabled in this process", _error)
