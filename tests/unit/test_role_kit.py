"""The role kit: every pipeline role's process is built from its declaration in the topology."""

from __future__ import annotations

import ast
from functools import partial
from pathlib import Path

import pytest

from bench import llm_bench, processes
from services.common import kit
from services.common.failed_run import dead_letter_verdict
from services.composer.answered import OncePerRun
from tests.support import faults, pipeline
from tracebound import topology
from tracebound.errors import ConfigError
from tracebound.events import EVENT_TYPES, Verdict
from tracebound.llm import readiness
from tracebound.stack import service_env
from tracebound.stack.services import role_module

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _rules_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in topology.MODEL_ROLES:
        monkeypatch.delenv(f"TRACEBOUND_{name.upper()}_MODE", raising=False)


def test_the_model_roles_derive_from_the_topology() -> None:
    assert topology.MODEL_ROLES == ("planner", "executor", "verifier", "composer")
    assert tuple(r.name for r in topology.ROLES if r.model) == topology.MODEL_ROLES
    assert frozenset(topology.MODEL_ROLES) == service_env.MODE_ROLES
    assert llm_bench.LLM_ROLES == topology.MODEL_ROLES
    assert set(readiness.ROLE_NEEDS) == set(topology.MODEL_ROLES)
    assert set(topology.MODEL_ROLES) <= set(topology.PIPELINE_ROLES)


def test_the_pipeline_roles_derive_from_the_topology() -> None:
    expected = ("planner", "executor", "gatekeeper", "verifier", "composer")
    assert expected == topology.PIPELINE_ROLES
    assert processes.ROLES == pipeline.ROLES == faults.ROLES == expected


@pytest.mark.parametrize("name", topology.PIPELINE_ROLES)
def test_each_factory_builds_the_service_the_topology_declares(name: str) -> None:
    declared = topology.role(name)
    spec = kit.build_spec(name)
    assert spec.name == name
    assert spec.input_topics == declared.input_topics
    assert spec.output_topics == declared.output_topics
    assert spec.accepts == tuple(EVENT_TYPES[e] for e in declared.accepts)
    assert spec.on_poison is not None
    assert spec.model_budget is None  # rules mode: no model, no budget
    assert bool(spec.collectors) == declared.model  # the fallback monitor and readiness


@pytest.mark.parametrize("name", ["planner", "executor", "gatekeeper", "verifier"])
def test_a_role_answers_a_dead_lettered_run_with_a_failed_verdict(name: str) -> None:
    hook = kit.build_spec(name).on_poison
    assert isinstance(hook, partial)
    assert hook.func is dead_letter_verdict and hook.args == (name,)


def test_the_composer_answers_once_and_keeps_its_answered_runs() -> None:
    spec = kit.build_spec("composer")
    assert isinstance(spec.handler, OncePerRun)
    assert spec.on_poison == spec.handler.failed
    answered = spec.handler.answered
    assert spec.on_assign == answered.restore
    assert spec.on_rewind == answered.forget
    assert spec.on_commit == answered.commit


def test_a_handler_that_takes_other_events_than_declared_is_refused() -> None:
    def wrong(context: kit.RoleContext) -> kit.Wiring[Verdict]:
        return kit.Wiring(lambda event: [], (Verdict,))

    with pytest.raises(ConfigError, match=r"planner.*Verdict.*DiagnosisRequested"):
        kit.build_spec("planner", wrong)


def test_a_role_without_wiring_has_no_factory() -> None:
    with pytest.raises(ConfigError, match="sentinel"):
        kit.load_factory("sentinel")


@pytest.mark.parametrize("name", topology.PIPELINE_ROLES)
def test_each_role_main_is_one_call_of_the_kit(name: str) -> None:
    path = ROOT / role_module(name).replace(".", "/") / "__main__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [n for n in tree.body if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)]
    assert len(calls) == 1
    assert ast.unparse(calls[0]) == f"role_process('{name}', __name__)"
