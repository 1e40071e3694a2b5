"""The groundedness corpus (evals/groundedness/) is intact, complete and held out.

These tests check the corpus only; no verifier result is asserted here.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from evals.groundedness.core import EDIT_CLASSES as CLASSES

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "evals" / "groundedness"
SPLITS = {"dev": "dev.jsonl", "test": "test.jsonl"}
EDIT_CLASSES = set(CLASSES)


@cache
def cases(split: str) -> tuple[dict[str, Any], ...]:
    lines = (CORPUS / SPLITS[split]).read_text(encoding="utf-8").splitlines()
    return tuple(json.loads(line) for line in lines if line.strip())


def every_case() -> list[dict[str, Any]]:
    return [c for split in SPLITS for c in cases(split)]


def test_files_match_the_manifest() -> None:
    manifest = json.loads((CORPUS / "MANIFEST.json").read_text(encoding="utf-8"))
    for split, name in SPLITS.items():
        digest = hashlib.sha256((CORPUS / name).read_bytes()).hexdigest()
        assert digest == manifest["files"][name]["sha256"], f"{name} changed since it was frozen"
        assert len(cases(split)) == manifest["files"][name]["cases"]


def test_sizes_kinds_and_languages() -> None:
    all_cases = every_case()
    true = [c for c in all_cases if c["expect"] == "PASS"]
    edits = [c for c in all_cases if c["expect"] == "NOT_PASS"]
    assert len(true) + len(edits) == len(all_cases)
    assert len(true) >= 500
    assert len(edits) >= 500
    assert len({c["kind"] for c in all_cases}) >= 25
    langs = Counter(c["lang"] for c in true)
    assert set(langs) == {"en", "zh"}
    assert langs["zh"] / len(true) >= 0.4


@pytest.mark.parametrize("split", sorted(SPLITS))
def test_split_has_every_edit_class_and_kind(split: str) -> None:
    mine = cases(split)
    assert all(c["split"] == split for c in mine)
    for lang in ("en", "zh"):
        classes = {c["edit_class"] for c in mine if c["expect"] == "NOT_PASS" and c["lang"] == lang}
        assert classes == EDIT_CLASSES, f"{split}/{lang} lacks {EDIT_CLASSES - classes}"
    other = "test" if split == "dev" else "dev"
    assert {c["kind"] for c in mine} == {c["kind"] for c in cases(other)}


def test_ids_edits_and_states() -> None:
    all_cases = every_case()
    by_id = {c["id"]: c for c in all_cases}
    assert len(by_id) == len(all_cases), "case ids repeat"
    for case in all_cases:
        if case["expect"] == "PASS":
            assert case["edit_class"] is None and case["base_id"] is None
            assert case["states"], case["id"]
            continue
        assert case["edit_class"] in EDIT_CLASSES, case["id"]
        base = by_id.get(case["base_id"])
        assert base is not None and base["expect"] == "PASS", case["id"]
        assert base["split"] == case["split"] and base["kind"] == case["kind"]
        claim = case["executor_structured_output"]["claims"][0]
        base_claim = base["executor_structured_output"]["claims"][0]
        assert claim["claim_text"] != base_claim["claim_text"], case["id"]


def test_every_excerpt_is_in_its_ref_text() -> None:
    for case in every_case():
        refs = {
            (inv["source_invocation_id"], ref["raw_path"]): ref["text"]
            for inv in case["tool_invocations"]
            for ref in inv["retrieval_details"]["evidence_refs"]
        }
        claims = case["executor_structured_output"]["claims"]
        assert len(claims) == 1, case["id"]
        for binding in claims[0]["evidence_bindings"]:
            text = refs[(binding["source_invocation_id"], binding["raw_path"])]
            assert binding["evidence_excerpt"] in text, case["id"]


def _repository_words() -> set[str]:
    words: set[str] = set()
    skip = {".venv", ".git", "node_modules"}
    for path in ROOT.rglob("*"):
        if path.suffix not in (".py", ".md", ".json") or not path.is_file():
            continue
        rel = path.relative_to(ROOT)
        if skip.intersection(rel.parts) or rel.parts[:2] == ("evals", "groundedness"):
            continue
        words.update(
            re.findall(r"[a-z]+", path.read_text(encoding="utf-8", errors="ignore").lower())
        )
    return words


def test_invented_names_appear_nowhere_else_in_the_repository() -> None:
    names = {word for case in every_case() for word in case["entities"]}
    assert len(names) > 100
    clashes = sorted(names & _repository_words())
    assert not clashes, f"corpus names found outside evals/groundedness/: {clashes[:20]}"
