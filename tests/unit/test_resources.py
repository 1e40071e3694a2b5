"""One resource root: every data lookup goes through it, and the wheel ships its folders."""

from __future__ import annotations

import ast
import os
import re

from tracebound import resources

SOURCE_FOLDERS = ("tracebound", "services", "projections", "web", "replay", "bench")


def _setup_folders() -> tuple[str, ...]:
    """``APP_FOLDERS`` of setup.py, read without running it."""
    tree = ast.parse((resources.ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "APP_FOLDERS":
            value = ast.literal_eval(node.value)
            assert isinstance(value, tuple)
            return value
    raise AssertionError("setup.py has no APP_FOLDERS")


def test_in_a_checkout_the_root_is_the_repository() -> None:
    assert (resources.ROOT / "pyproject.toml").is_file()
    assert not (resources.ROOT / "tracebound" / "_app").exists()
    assert resources.path("schemas", "topics.json").is_file()


def test_every_looked_up_folder_ships_in_the_wheel() -> None:
    shipped = set(_setup_folders())
    used = set()
    for folder in SOURCE_FOLDERS:
        for path in (resources.ROOT / folder).rglob("*.py"):
            used |= set(re.findall(r'resources\.path\(\s*"([^"]+)"', path.read_text("utf-8")))
    assert used, "no data lookups found: the pattern is stale"
    assert used <= shipped, f"looked up but not in setup.py APP_FOLDERS: {used - shipped}"
    code = {f for f in SOURCE_FOLDERS if f != "tracebound"}
    assert code <= shipped


def test_no_data_path_is_computed_from_a_module_location() -> None:
    offenders = [
        str(path.relative_to(resources.ROOT))
        for folder in SOURCE_FOLDERS
        for path in (resources.ROOT / folder).rglob("*.py")
        if re.search(r"REPO_ROOT\s*=", path.read_text("utf-8"))
    ]
    assert offenders == []


def test_child_env_puts_the_root_first_once() -> None:
    root = str(resources.ROOT)
    env = resources.child_env({"PYTHONPATH": os.pathsep.join(["/x", root]), "A": "1"})
    assert env["PYTHONPATH"] == os.pathsep.join([root, "/x"])
    assert env["A"] == "1"
    assert resources.child_env({})["PYTHONPATH"] == root
