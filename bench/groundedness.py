"""The rules verifier on the held-out groundedness corpus (evals/groundedness/).

``.venv/bin/python -m bench.groundedness --split dev|test|both``
``.venv/bin/python -m bench.groundedness --wordings``

Each case is one verifier input; it is judged in-process by the function
``tracebound verifier check`` uses. A true claim should PASS; an edit should
not. The test split is for the final measurement only: changing the verifier
while looking at its cases would make it a second dev split.

``--wordings`` judges ``wordings.json``: hand-written claims in wordings of their
own (comparisons, exact values, orders, conclusions) over items printed as the
tools print them, in two sets written at different times.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evals.groundedness.core import EDIT_CLASSES
from services.verifier.input import parse_inputs
from services.verifier.judge import verify
from services.verifier.rules_file import load_overclaim_phrases, load_verifier_rules

CORPUS = Path(__file__).resolve().parents[1] / "evals" / "groundedness"
FILES = {"dev": "dev.jsonl", "test": "test.jsonl"}
TEST_WARNING = (
    "WARNING: the test split is for the final measurement only; "
    "do not look at its cases or tune the verifier to it."
)


@dataclass(frozen=True, slots=True)
class Result:
    case_id: str
    split: str
    lang: str
    kind: str
    expect: str
    edit_class: str | None
    verdict: str


def judge(split: str, corpus: Path = CORPUS) -> list[Result]:
    """Every case of one split, judged by the current rules verifier."""
    rules = load_verifier_rules(), load_overclaim_phrases()
    text = (corpus / FILES[split]).read_text(encoding="utf-8")
    out = []
    for item in parse_inputs(text):
        extra = item.model_extra or {}
        outcome = verify(item, *rules)
        edit_class = extra.get("edit_class")
        out.append(
            Result(
                case_id=str(extra["id"]),
                split=str(extra["split"]),
                lang=str(extra["lang"]),
                kind=str(extra["kind"]),
                expect=str(extra["expect"]),
                edit_class=str(edit_class) if edit_class is not None else None,
                verdict=outcome.verdict,
            )
        )
    return out


def judge_wordings(corpus: Path = CORPUS) -> dict[str, list[tuple[str, str, str]]]:
    """(expected, verdict, claim) of every claim of ``wordings.json``, per set.

    Each case is the envelope of the corpus's first case with the cited ref text,
    its excerpt and the claim replaced: one claim citing one whole item.
    """
    rules = load_verifier_rules(), load_overclaim_phrases()
    doc = json.loads((corpus / "wordings.json").read_text(encoding="utf-8"))
    with (corpus / FILES["dev"]).open(encoding="utf-8") as lines:
        envelope = json.loads(lines.readline())
    out: dict[str, list[tuple[str, str, str]]] = {}
    for name in ("first", "second"):
        cases = []
        for case in doc[name]:
            ref, claim = doc["items"][case["item"]], case["claim"]
            raw = copy.deepcopy(envelope)
            raw["executor_structured_output"]["claims"][0]["claim_text"] = claim
            raw["executor_structured_output"]["claims"][0]["evidence_bindings"][0][
                "evidence_excerpt"
            ] = ref
            raw["gatekeeper_result"]["checked_bindings"][0]["matched_text"] = ref
            cases.append(json.dumps(raw, ensure_ascii=False))
        verdicts = [verify(item, *rules).verdict for item in parse_inputs("\n".join(cases))]
        out[name] = [(c["expect"], v, c["claim"]) for c, v in zip(doc[name], verdicts, strict=True)]
    return out


def wordings_table(judged: dict[str, list[tuple[str, str, str]]]) -> list[str]:
    """Per set: true claims that PASS, edits that PASS (each should be 0), and the misses."""
    lines = []
    for name, rows in judged.items():
        true = [v for e, v, _ in rows if e == "PASS"]
        edits = [v for e, v, _ in rows if e != "PASS"]
        lines.append(
            f"{name:6}  true claims PASS {true.count('PASS')}/{len(true)}"
            f"  edits PASS {edits.count('PASS')}/{len(edits)}"
        )
        lines += [
            f"        {v:10} expected {e:8} {c}"
            for e, v, c in rows
            if (v == "PASS") != (e == "PASS")
        ]
    return lines


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "    -"


def table(results: Sequence[Result], title: str) -> list[str]:
    """True claims PASS % and REJECT %, edits passed per class, per language and overall."""
    langs = sorted({r.lang for r in results})
    columns = [*langs, "all"]
    rows: list[tuple[str, list[str]]] = []

    def group(lang: str) -> list[Result]:
        return [r for r in results if lang in ("all", r.lang)]

    true_of = {c: [r for r in group(c) if r.expect == "PASS"] for c in columns}
    edits_of = {c: [r for r in group(c) if r.expect != "PASS"] for c in columns}
    rows.append(("true claims", [str(len(true_of[c])) for c in columns]))
    rows.append(
        (
            "true claims PASS",
            [_pct(sum(r.verdict == "PASS" for r in true_of[c]), len(true_of[c])) for c in columns],
        )
    )
    rows.append(
        (
            "true claims REJECT",
            [
                _pct(sum(r.verdict == "REJECT" for r in true_of[c]), len(true_of[c]))
                for c in columns
            ],
        )
    )
    rows.append(("edits", [str(len(edits_of[c])) for c in columns]))
    rows.append(
        (
            "edits caught (not PASS)",
            [
                _pct(sum(r.verdict != "PASS" for r in edits_of[c]), len(edits_of[c]))
                for c in columns
            ],
        )
    )
    for edit_class in EDIT_CLASSES:
        cells = []
        for c in columns:
            of_class = [r for r in edits_of[c] if r.edit_class == edit_class]
            passed = sum(r.verdict == "PASS" for r in of_class)
            cells.append(f"{passed}/{len(of_class)} PASS")
        rows.append((f"  {edit_class}", cells))
    width = max(len(name) for name, _ in rows)
    lines = [title, f"{'':{width}}  " + "  ".join(f"{c:>14}" for c in columns)]
    lines += [f"{name:{width}}  " + "  ".join(f"{v:>14}" for v in cells) for name, cells in rows]
    return lines


def kinds(results: Sequence[Result]) -> list[str]:
    """Cases per kind: true claims and edits."""
    true = Counter(r.kind for r in results if r.expect == "PASS")
    edits = Counter(r.kind for r in results if r.expect != "PASS")
    width = max(len(k) for k in true | edits)
    lines = [f"{'kind':{width}}  {'true':>5}  {'edits':>5}"]
    lines += [f"{k:{width}}  {true[k]:>5}  {edits[k]:>5}" for k in sorted(true | edits)]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--split", choices=("dev", "test", "both"), default="dev")
    parser.add_argument("--wordings", action="store_true", help="judge wordings.json instead")
    args = parser.parse_args(argv)
    if args.wordings:
        print("\n".join(wordings_table(judge_wordings())))
        return 0
    splits = ("dev", "test") if args.split == "both" else (args.split,)
    if "test" in splits:
        print(TEST_WARNING, file=sys.stderr)
        print(TEST_WARNING)
    everything: list[Result] = []
    for split in splits:
        results = judge(split)
        everything += results
        print("\n".join(table(results, f"== split {split} ({len(results)} cases) ==")))
        print()
    if len(splits) > 1:
        print("\n".join(table(everything, f"== overall ({len(everything)} cases) ==")))
        print()
    print("\n".join(kinds(everything)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
