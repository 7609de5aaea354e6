"""pytest setup for tests/python: import moeh from the source tree (python/), unless
MOEH_TEST_INSTALLED=1 asks for the installed package. libmoe comes from $MOEH_LIBMOE (meson test sets it
to the library of the build); without it, from build/libmoe.so of the source tree when there is one,
else moeh's own search (the installed library)."""

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

if os.environ.get("MOEH_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(ROOT, "python"))
    if not os.environ.get("MOEH_LIBMOE"):
        _lib = os.path.join(ROOT, "build", "libmoe.so")
        if os.path.exists(_lib):
            os.environ["MOEH_LIBMOE"] = _lib


import pytest  # noqa: E402


@pytest.fixture
def torch_threads():
    """Two PyTorch intra-op threads for a test, then the previous count (the torch suites use it)."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(old)
