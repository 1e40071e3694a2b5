"""The apt installer never lets a package start its own service."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tracebound.stack.apt import services_forbidden


def test_policy_forbids_service_starts_while_installing(tmp_path: Path) -> None:
    policy = tmp_path / "policy-rc.d"
    with services_forbidden(policy):
        assert os.access(policy, os.X_OK)
        done = subprocess.run([str(policy), "prometheus", "start"], check=False)
        assert done.returncode == 101
    assert not policy.exists()


def test_an_existing_policy_is_left_alone(tmp_path: Path) -> None:
    policy = tmp_path / "policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    with services_forbidden(policy):
        pass
    assert policy.read_text(encoding="utf-8") == "#!/bin/sh\nexit 0\n"
