"""The wheel built from the repository works installed, away from any checkout.

Built from a copy of the sources (so a stale ``build/`` folder cannot leak into it),
installed with its dependencies (pinned by ``constraints.txt``) into a new virtualenv
that sees no other site-packages, and run from a folder outside the checkout with a
cleaned environment. The dependencies are downloaded from the package index once into
the stack's download cache and installed from there afterwards (``--no-index``), so a
fresh machine pays the download once (about 25 MB); then the build, the virtualenv,
the install from the cache and the commands take about 30 s on an idle 2-core machine
(several minutes when other work loads it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.demo_evidence import scenarios
from tests.support.kafka_io import REPO
from tests.support.stack import StackHandle
from tracebound.events import EVENT_TYPES
from tracebound.settings import StackSettings

pytestmark = pytest.mark.slow

PIP_TIMEOUT_S = 900
# Generic names a wheel must not install at the top of site-packages.
APP_PACKAGES = ("services", "projections", "web", "replay", "bench")
# What the copy leaves out: local state, build output and caches.
NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "*.pyc", ".*_cache",
    "bench-results", "htmlcov", ".coverage*", "tests",
)  # fmt: skip

# Run inside the installed tracebound: where it finds its data, and that it is all there.
# The local stack's Kafka files ship inside the package (tracebound/stack/config).
PROBE = """
import json, sys
from tracebound import resources
from tracebound.stack import paths
files = ["schemas/topics.json", "rules/gatekeeper-rules.json", "prompts/skills",
         "runbooks", "projections/migrations", "services/executor/tools/demo_data",
         "evals/demo"]
stack = [paths.SERVER_PROPERTIES_TEMPLATE, paths.LOG4J2_TEMPLATE, paths.KAFKA_POM]
print(json.dumps({"root": str(resources.ROOT), "missing": [f for f in files
      if not resources.path(*f.split("/")).exists()]
      + [str(p) for p in stack if not p.is_file()], "path": sys.path}))
"""


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 180) -> str:
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{argv[:3]} failed: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done.stdout


def _install(python: Path, wheel: Path, cwd: Path, env: dict[str, str]) -> None:
    """Install ``wheel`` with its pinned dependencies, downloading only what is missing."""
    wheels = StackSettings().cache_dir.expanduser() / "python-wheels"
    constraints = ["-c", str(REPO / "constraints.txt")]
    offline = [str(python), "-m", "pip", "install", "-q", "--no-index", "--find-links"]
    offline += [str(wheels), *constraints, str(wheel)]
    if subprocess.run(offline, cwd=cwd, env=env, capture_output=True, check=False).returncode:
        download = [sys.executable, "-m", "pip", "download", "-q", "-d", str(wheels)]
        _run([*download, *constraints, str(wheel)], cwd, env, PIP_TIMEOUT_S)
        for own in wheels.glob("tracebound-*.whl"):
            own.unlink()  # only dependencies are kept
        _run(offline, cwd, env, PIP_TIMEOUT_S)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a fresh virtualenv holding the wheel and its dependencies."""
    root = tmp_path_factory.mktemp("wheel")
    shutil.copytree(REPO, root / "src", ignore=NOT_SOURCES)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(root / "dist")]
    _run([*pip, str(root / "src")], root, env, PIP_TIMEOUT_S)
    [wheel] = (root / "dist").glob("tracebound-*.whl")
    _run([sys.executable, "-m", "venv", str(root / "venv")], root, env)
    bin_dir = root / "venv" / "bin"
    _install(bin_dir / "python", wheel, root, env)
    return bin_dir


def _env(stack: StackHandle, bin_dir: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in stack.env().items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("TRACEBOUND_TOOLS_")
    }
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_installed_wheel_works_outside_the_checkout(
    installed: Path, stack: StackHandle, tmp_path: Path
) -> None:
    env = _env(stack, installed)
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    site = next((installed.parent / "lib").glob("python3*/site-packages"))
    assert not [name for name in APP_PACKAGES if (site / name).exists()]
    assert (site / "tracebound" / "_app" / "services").is_dir()

    probe: dict[str, Any] = json.loads(_run([str(installed / "python"), "-c", PROBE], cwd, env))
    assert probe["root"] == str(site / "tracebound" / "_app")
    assert probe["missing"] == []
    assert str(REPO) not in probe["path"]
    done = subprocess.run(
        [str(installed / "python"), "-c", "import services"], cwd=cwd, env=env, check=False
    )
    assert done.returncode != 0, "the application packages are importable outside tracebound"

    tracebound = str(installed / "tracebound")
    evidence = next(s for s in scenarios() if s.name == "full-incident")
    request = {
        "executor_structured_output": evidence.structured_output,
        "tool_invocations": evidence.tool_invocations,
    }
    (cwd / "evidence.json").write_text(json.dumps(request), encoding="utf-8")
    [result] = map(
        json.loads,
        _run([tracebound, "gatekeeper", "check", "evidence.json"], cwd, env).splitlines(),
    )
    assert (result["status"], result["rule_set_version"]) == ("pass", "gatekeeper-rules-v3")

    knowledge = _run(
        [tracebound, "tool", "lookup_knowledge", "--param", "query=HikariCP connection pool",
         "--param", "alert_name=HikariPoolExhausted", "--param", "top_k=2"],
        cwd, env,
    )  # fmt: skip
    assert "evidence_status: supported" in knowledge
    assert "$.evidence_blocks[0]  MySQL connection pool exhaustion (HikariCP) / " in knowledge

    exported = _run([tracebound, "schemas", "export", "avsc"], cwd, env)
    names = sorted(p.name for p in (cwd / "avsc").iterdir())
    assert names == sorted(f"tracebound.{event}.avsc" for event in EVENT_TYPES)
    assert exported.count("single-object header c301") == len(EVENT_TYPES)
