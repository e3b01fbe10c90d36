# SPDX-License-Identifier: MIT
"""Shared settings of the txattn Python tests: hypothesis reproducible and bounded (ctest runs the
suite on two cores in about a minute), and the build's tools."""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "txattn",
    max_examples=int(os.environ.get("TXATTN_HYPOTHESIS_EXAMPLES", "150")),
    deadline=None,  # nothing here is timed
    derandomize=True,  # the same examples on every run and machine
    database=None,  # nothing written beside the sources or the build
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("txattn")

SANITIZED = os.environ.get("TXATTN_PYTHON_SANITIZED") == "1"


@pytest.fixture(scope="session")
def ctx():
    """One context for the suite, on two threads (so that threaded kernels run threaded)."""
    import txattn

    return txattn.Context(threads=2)
