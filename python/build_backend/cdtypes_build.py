"""The build backend of cdtypes: scikit-build-core, plus libcdt's sources in the sdist.

python/CMakeLists.txt builds libcdt (the C library this package loads) from its sources. In a
checkout they lie one level up (the repository root), outside the Python project, so an sdist
made by scikit-build-core alone would not carry them and would not build anywhere else. Before
the sdist is written, this backend copies what the build needs from the repository root into
``_libcdt/`` (the root CMakeLists.txt, libcdt/, bindings/, cmake/, LICENSE), lets
scikit-build-core pack the project with that copy (pyproject.toml: sdist.include), and removes
the copy again, so a checkout never builds from a stale one. Building from an unpacked sdist,
the copy is already there and is used as it is. Wheels and every other hook are
scikit-build-core's own.
"""

import os
import shutil

from scikit_build_core import build as _skbuild
from scikit_build_core.build import *  # noqa: F401,F403 - every PEP 517/660 hook
from scikit_build_core.build import __all__  # noqa: F401

# what the Python build needs from the repository root (python/CMakeLists.txt adds the root
# CMakeLists.txt with the tests, examples and benchmarks turned off)
_ROOT_ITEMS = ("CMakeLists.txt", "LICENSE", "libcdt", "bindings", "cmake")
_COPY = "_libcdt"
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")


def _repository_root(project):
    """The root of the checkout this project is the python/ folder of, or None (an sdist)."""
    root = os.path.dirname(project)
    python = os.path.join(root, "python")
    if (os.path.isfile(os.path.join(root, "libcdt", "include", "cdt.h"))
            and os.path.isdir(python) and os.path.samefile(python, project)):
        return root
    return None


def build_sdist(sdist_directory, config_settings=None):
    project = os.path.abspath(os.getcwd())  # PEP 517: hooks run in the project's folder
    copy = os.path.join(project, _COPY)
    root = _repository_root(project)
    if root is None:
        if not os.path.isfile(os.path.join(copy, "libcdt", "include", "cdt.h")):
            raise RuntimeError("cdtypes: neither a checkout (../libcdt) nor a copy of libcdt's "
                               "sources (%s) to put into the sdist" % _COPY)
        return _skbuild.build_sdist(sdist_directory, config_settings)
    shutil.rmtree(copy, ignore_errors=True)
    try:
        os.mkdir(copy)
        for item in _ROOT_ITEMS:
            source = os.path.join(root, item)
            if os.path.isdir(source):
                shutil.copytree(source, os.path.join(copy, item), ignore=_IGNORE)
            else:
                shutil.copy2(source, os.path.join(copy, item))
        return _skbuild.build_sdist(sdist_directory, config_settings)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
