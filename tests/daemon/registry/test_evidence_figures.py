"""The proposals lists read three figures of a proposal's evidence without pydantic
(`models.evidence_figures`): the same values `Evidence.model_validate` gives, whatever JSON holds."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from skillopt_daemon.registry import Evidence
from skillopt_daemon.registry.models import evidence_figures

EVIDENCE: list[dict[str, Any]] = [
    {},
    {"found_at": "claude-code:user"},
    {"delta": 0.25, "confidence": 0.9},
    {"delta": -0.5, "baseline_score": 0.1, "candidate_score": 0.9},
    {"baseline_score": 0.25, "candidate_score": 0.75, "confidence": None},
    {"baseline_score": 0.25},
    {"new_skill": True, "family": {"name": "x"}, "install_to": ["claude-code:user"]},
    {"new_skill": False, "delta": 0.0, "confidence": 0.0},
    # what pydantic converts: ints, numeric strings, booleans as numbers, a string for the flag
    {"confidence": 1, "baseline_score": 0, "candidate_score": 1},
    {"delta": "0.5", "confidence": "0.75"},
    {"delta": True},
    {"new_skill": "yes"},
    {"new_skill": 1, "delta": 2},
    {"delta": float("nan")},
    {"baseline_score": 1e308, "candidate_score": -1e308},
]


@pytest.mark.parametrize("evidence", EVIDENCE)
def test_the_figures_are_the_models(evidence: dict[str, Any]) -> None:
    ev = Evidence.model_validate(evidence)
    got = evidence_figures(evidence)
    want = (ev.new_skill, ev.score_change(), ev.confidence)
    assert repr(got) == repr(want)  # repr: the same types (1.0, not 1) and nan where nan
    assert [type(x) for x in got] == [type(x) for x in want]


@pytest.mark.parametrize("evidence", [{"confidence": "high"}, {"new_skill": "maybe"}, {"delta": [1]}])
def test_evidence_the_model_refuses_is_refused(evidence: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        evidence_figures(evidence)
