"""The wheel's one compiled part: the stack sampler's frame walker (native/eroica_frames.c). It
reads CPython 3.11's interpreter frames, so it is built only by a CPython 3.11 that has its own
internal headers (python3-dev), and refuses at import any other release than the one it was built
against (to the patch: the .c file's Py_Version check). Optional: where it is not built, the wheel
is the pure package (py3-none-any) and the sampler keeps its Python path; a window's stacks file
says which walker read it. Everything else about the package is in pyproject.toml."""
import os
import sys
import sysconfig

from setuptools import Extension, setup


def frame_walker():
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
        return []
    if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "internal", "pycore_frame.h")):
        return []
    return [Extension("_eroica_frames", ["native/eroica_frames.c"], optional=True,
                      extra_compile_args=["-fvisibility=hidden"],
                      # stripped, relro and now, as the .deb's copy (python/native/CMakeLists.txt)
                      extra_link_args=["-s", "-Wl,-z,relro,-z,now"])]


setup(ext_modules=frame_walker())
