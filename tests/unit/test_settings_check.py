"""Unknown TRACEBOUND_* variables are reported; every settings class is frozen and known."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from tracebound.cli import SETTINGS_MODULES, load_settings_classes
from tracebound.settings import (
    PLAIN_VARIABLES,
    KafkaSettings,
    RuntimeSettings,
    settings_classes,
)
from tracebound.settings_check import (
    UnknownVariable,
    known_variables,
    report_unknown_variables,
    unknown_variables,
)
from tracebound.stack.services import ROLE_INPUTS

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("tracebound", "services", "projections", "web", "replay", "bench")
# A variable's full name, unless it is quoted as an example of the warning itself.
WRITTEN_NAME = re.compile(r"(?<!unknown environment variable )\bTRACEBOUND_[A-Z0-9_]*[A-Z0-9]\b")


def _all_known() -> set[str]:
    load_settings_classes()
    known, _ = known_variables(ROLE_INPUTS)
    return known


def test_unknown_names_are_returned_with_the_closest_known_one() -> None:
    env = {
        "TRACEBOUND_GATEKEPER_BATCH_SIZE": "3",
        "TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS": "x:1",
        "TRACEBOUND_NOTHING_LIKE_IT": "1",
        "PATH": "/bin",
    }
    known = {"TRACEBOUND_GATEKEEPER_BATCH_SIZE", "TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS"}
    assert unknown_variables(env, known) == [
        UnknownVariable("TRACEBOUND_GATEKEPER_BATCH_SIZE", "TRACEBOUND_GATEKEEPER_BATCH_SIZE"),
        UnknownVariable("TRACEBOUND_NOTHING_LIKE_IT", None),
    ]


def test_names_compare_case_insensitively_and_only_within_the_scope() -> None:
    known = {"TRACEBOUND_PG_DSN"}
    assert unknown_variables({"tracebound_pg_dsn": "x"}, known) == []
    env = {"TRACEBOUND_PG_DNS": "x", "TRACEBOUND_OTHER_X": "1"}
    found = unknown_variables(env, known, scope=["TRACEBOUND_PG_"])
    assert found == [UnknownVariable("TRACEBOUND_PG_DNS", "TRACEBOUND_PG_DSN")]
    assert "did you mean TRACEBOUND_PG_DSN?" in found[0].message()


def test_known_names_come_from_the_settings_classes() -> None:
    known = _all_known()
    for name in KafkaSettings.model_fields:
        assert f"TRACEBOUND_KAFKA_{name.upper()}" in known
    # per-service classes are known under every role's prefix
    for role in ROLE_INPUTS:
        for name in RuntimeSettings.model_fields:
            assert f"TRACEBOUND_{role.upper()}_{name.upper()}" in known
    assert "TRACEBOUND_PLANNER_MODE" in known
    assert "TRACEBOUND_GATEKEEPER_RULES_PATH" in known
    assert set(PLAIN_VARIABLES) <= known
    assert "TRACEBOUND_KAFKA_BOOTSTRAP_SERVER" not in known


def test_a_service_warns_once_per_unknown_name_under_its_own_prefixes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = {
        "TRACEBOUND_GATEKEEPER_BATCH_SIZ": "3",
        "TRACEBOUND_GATEKEEPER_BATCH_SIZE": "3",
        "TRACEBOUND_SOMEONE_ELSES_KNOB": "1",  # another process's prefix: not judged here
    }
    with caplog.at_level(logging.WARNING, logger="tracebound.settings"):
        first = report_unknown_variables("gatekeeper", env)
        second = report_unknown_variables("gatekeeper", env)
    assert (
        [u.name for u in first] == ["TRACEBOUND_GATEKEEPER_BATCH_SIZ"] == [u.name for u in second]
    )
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [
        "unknown environment variable TRACEBOUND_GATEKEEPER_BATCH_SIZ is ignored; "
        "did you mean TRACEBOUND_GATEKEEPER_BATCH_SIZE?"
    ]


def test_the_command_line_judges_every_tracebound_name() -> None:
    found = unknown_variables({"TRACEBOUND_SOMEONE_ELSES_KNOB": "1"}, _all_known())
    assert [u.name for u in found] == ["TRACEBOUND_SOMEONE_ELSES_KNOB"]


def test_every_settings_class_is_frozen() -> None:
    load_settings_classes()
    assert len(settings_classes()) >= 10
    for cls in settings_classes():
        assert cls.model_config.get("frozen") is True, cls.__qualname__
    kafka = KafkaSettings()
    with pytest.raises(ValidationError):
        kafka.bootstrap_servers = "elsewhere:9092"  # type: ignore[misc]


_LIST_CLASSES = """
import importlib, json, pkgutil, sys
from pydantic_settings import BaseSettings
from tracebound.settings import TraceboundSettings, settings_classes
if sys.argv[1] == "all":
    for package in {packages!r}:
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
            importlib.import_module(info.name)
else:
    from tracebound.cli import load_settings_classes
    load_settings_classes()
def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)
found = {{c.__module__ + "." + c.__qualname__: issubclass(c, TraceboundSettings)
         for c in subclasses(BaseSettings) if c.__module__.split(".")[0] in {packages!r}}}
registered = sorted(c.__module__ + "." + c.__qualname__ for c in settings_classes())
print(json.dumps({{"found": found, "registered": registered}}))
"""


def _classes(which: str) -> dict[str, object]:
    script = _LIST_CLASSES.format(packages=PACKAGES)
    out = subprocess.run(
        [sys.executable, "-c", script, which],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    result: dict[str, object] = json.loads(out)
    return result


@pytest.mark.slow
def test_every_settings_class_derives_from_the_base_and_its_module_is_listed() -> None:
    everything = _classes("all")
    found = everything["found"]
    assert isinstance(found, dict)
    assert all(found.values()), f"not derived from TraceboundSettings: {found}"
    assert (
        sorted(set(found) - {"tracebound.settings.TraceboundSettings"})
        == (everything["registered"])
    )
    assert _classes("listed")["registered"] == everything["registered"], (
        f"add the missing modules to SETTINGS_MODULES {SETTINGS_MODULES}"
    )


def test_every_tracebound_name_written_in_the_code_or_docs_is_known() -> None:
    known = _all_known()
    deliberate = {Path(__file__).resolve(), REPO / "tracebound" / "settings_check.py"}
    files = [REPO / "README.md", *(REPO / "docs").rglob("*.md")]
    for package in (*PACKAGES, "tests"):
        files += (REPO / package).rglob("*.py")
    unknown = {
        (name, str(path.relative_to(REPO)))
        for path in files
        if path.resolve() not in deliberate
        for name in WRITTEN_NAME.findall(path.read_text())
        if name not in known
    }
    assert not unknown, "names no settings class reads (add to PLAIN_VARIABLES if read directly)"
