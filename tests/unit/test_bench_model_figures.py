"""The model lines of the bench table: targets judged on an alert diagnosis."""

from __future__ import annotations

from bench.figures import model_figures
from bench.llm_tokens import RoleFigures, SuiteFigures


def _suite(alert_runs: dict[str, tuple[int, float]], suite_tokens: int) -> SuiteFigures:
    figures = SuiteFigures(runs=4, seconds=40.0, alert_runs=alert_runs)
    figures.roles["executor"] = RoleFigures(calls=4, prompt_tokens=4 * suite_tokens)
    figures.verdicts = {"a": "PASS"}
    return figures


def test_prompt_and_model_time_targets_are_read_on_the_alert_runs() -> None:
    default = _suite({"alert-en": (5_000, 0.1), "alert-zh": (5_400, 0.1)}, 9_000)
    small = _suite({"alert-en": (2_600, 0.1), "alert-zh": (2_800, 0.1)}, 7_000)
    real = _suite({"alert-en": (2_000, 40.0), "alert-zh": (2_200, 70.0)}, 3_000)
    tokens, model = model_figures(
        {"default": default.as_dict(), "small": small.as_dict()}, real.as_dict(), "small"
    )
    assert tokens.ok is True, "the suite mean (9,000) is not what the target is about"
    assert tokens.text.startswith("5,200 per alert diagnosis (2,700 with the small profile)")
    assert "9,000 (7,000) per diagnosis of the 4 demo cases, alert runs 2 of them" in tokens.text
    assert model.ok is True and model.text.startswith("55.0 model s and 2,100 prompt tokens")


def test_an_alert_run_over_the_small_target_misses_it() -> None:
    default = _suite({"alert": (5_000, 0.1)}, 5_000)
    small = _suite({"alert": (3_200, 0.1)}, 3_200)
    real = _suite({"alert": (3_000, 61.0)}, 3_000)
    tokens, model = model_figures(
        {"default": default.as_dict(), "small": small.as_dict()}, real.as_dict(), "small"
    )
    assert (tokens.ok, model.ok) == (False, False)


def test_without_a_real_server_the_line_says_why() -> None:
    suite = _suite({"alert": (5_000, 0.1)}, 5_000).as_dict()
    _tokens, real = model_figures({"default": suite, "small": suite}, "no llama-server", "small")
    assert real.text == "skipped: no llama-server" and real.ok is None
