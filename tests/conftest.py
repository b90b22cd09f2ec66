"""Shared pytest setup: the lazily created Spark session and hypothesis profiles.

Hypothesis profiles: 'ci' (selected when CI=true) runs fewer examples from a fixed seed per
test, so a CI run can be reproduced exactly; 'dev' is the default and draws new examples on
every run (that is where the generators find new bugs).
Both disable the deadline (JIT compilation and Spark jobs have uneven timings). Override with
HYPOTHESIS_PROFILE=name.
"""
from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, settings

# Let `pytest` work from a source checkout even before `pip install -e .`.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

settings.register_profile("ci", max_examples=15, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE")
                      or ("ci" if os.environ.get("CI", "").lower() == "true" else "dev"))


@pytest.fixture(scope="session")
def spark():
    """One SparkSession for the whole run, created only when a test asks for it."""
    from toaster.backends.spark.session import get_spark
    return get_spark()
