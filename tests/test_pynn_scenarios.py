"""PyNN's own system tests against pyNN.ranvier (issue 18): the scenarios of PyNN 0.13.0's
source distribution (test/system/scenarios), each called with the backend module as PyNN's
test_nest.py calls them with pyNN.nest (bench/pynn_scenarios.py prints the table).

Every scenario is expected to pass except those in NOT_YET, each with the reason: a feature
pyNN.ranvier does not have yet. NOT_YET is strict: a scenario listed there that passes fails
this test, so the list can only shrink honestly.
"""
from __future__ import annotations

import logging
import sys

import pytest

from conftest import ROOT

pytest.importorskip("pyNN")
sys.path.insert(0, str(ROOT / "bench"))
import pynn_scenarios  # noqa: E402

SDIST = pynn_scenarios.sdist_dir()

# (file, scenario) -> what it needs that pyNN.ranvier does not have yet
NOT_YET: dict[tuple[str, str], str] = {}


def _cases():
    if SDIST is None:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason="PyNN 0.13.0's source distribution could "
                                                                      "not be downloaded"))]
    cases = []
    for module, function in pynn_scenarios.scenarios(SDIST):
        reason = NOT_YET.get((module, function))
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        cases.append(pytest.param(module, function, marks=marks, id=f"{module}::{function}"))
    return cases


@pytest.mark.parametrize("module, function", _cases())
def test_pynn_scenario(module, function, tmp_path):
    logging.disable(logging.CRITICAL)          # the scenarios turn PyNN's debug logging on
    try:
        outcome, why = pynn_scenarios.run_one(SDIST, module, function, tmp_path)
    finally:
        logging.disable(logging.NOTSET)
    if outcome == "skipped":
        pytest.skip(why)
    assert outcome == "passed", why
