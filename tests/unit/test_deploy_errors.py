"""A new error that began right after a deploy names a cause no signature knows."""

from __future__ import annotations

from typing import Any

from services.executor.deploy_errors import deployed_at
from services.executor.diagnosis import Series
from services.executor.log_causes import after_deploy, unless_held
from services.executor.log_lines import Logged
from tests.support.series_items import ONSET, START, STEP, item, series_of

DEPLOY = 212  # the sample of the new generation: 13 minutes before the onset


def _generation(at: int = DEPLOY) -> list[Series]:
    """A generation bump (steps of 1 on a small number read as a change here) at ``at``."""
    gen = item(lambda i: 1 if i < at else 2, "count", "deployment_generation")
    return series_of([gen])


def _line(minutes: float, message: str, level: str = "ERROR") -> Logged:
    return Logged(f"{minutes}: {message}", message, level, ONSET + minutes * 60)


TZ = "job reminder failed: localize window for customer {}: unknown time zone America/Chicago"


def test_the_deploy_moment_comes_from_the_generation() -> None:
    moment = deployed_at(_generation())
    assert moment is not None and abs(moment - (START + DEPLOY * STEP)) <= 120
    assert deployed_at(_generation(at=10)) is None  # long before the rule window


def test_a_new_error_after_the_deploy_names_a_regression() -> None:
    lines = [_line(-11, "scheduler started", "INFO")]
    lines += [_line(-11 + i, TZ.format(58812 + i)) for i in range(3)]
    found = after_deploy(lines, _generation())
    assert found is not None and found.category == "deploy_regression"
    assert "unknown time zone" in found.cause("en") and found.first == lines[1].text


def test_an_error_logged_before_the_deploy_or_once_or_late_names_nothing() -> None:
    before = [_line(-40, TZ.format(1)), *[_line(-10 + i, TZ.format(i)) for i in range(3)]]
    once = [_line(-10, TZ.format(1))]
    late = [_line(-1, TZ.format(i)) for i in range(3)]  # 12 minutes after the deploy
    for lines in (before, once, late):
        assert after_deploy(lines, _generation()) is None
    # without a deploy, no such cause
    assert after_deploy([_line(-10 + i, TZ.format(i)) for i in range(3)], []) is None


def test_a_signature_goes_before_it_and_a_direct_rule_silences_both() -> None:
    lines: list[Any] = [_line(-10 + i, "connect: connection refused") for i in range(2)]
    lines += [_line(-10 + i, TZ.format(i)) for i in range(3)]
    found = unless_held([], lines, _generation(), [])
    assert found is not None and found.id == "new-error-after-deploy"
    held = unless_held([("pool-exhausted", "x")], lines, _generation(), [])
    assert held is None
