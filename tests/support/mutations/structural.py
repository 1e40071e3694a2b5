"""Family A, structural mutants: forged, foreign or malformed citations. Must reject."""

from __future__ import annotations

import random

from tests.support import demo_evidence as demo
from tests.support.mutations.base import (
    Maker,
    Outcome,
    claims_of,
    noise,
    norm,
    pick,
    ref_text,
    refs_of,
    shorten,
)


def _a_fake_id(rng: random.Random, s: demo.Scenario) -> Outcome:
    claim, binding = pick(rng, s)
    real = {inv["id"] for inv in s.tool_invocations}
    fake = rng.choice([n for n in (0, -1, 1, 516, 521, 999, 10**9, 1517, 5180) if n not in real])
    binding.update(
        source_invocation_id=fake, evidence_excerpt=noise(rng, binding["evidence_excerpt"])
    )
    return ("invocation.exists",), f"{claim['claim_id']}: source_invocation_id -> {fake}"


def _a_other_tool_id(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = pick(rng, s)
    others = [i["id"] for i in s.tool_invocations if i["tool_name"] != binding["tool_name"]]
    other = rng.choice(others)
    binding["source_invocation_id"] = other
    return ("invocation.tool_name",), f"{binding['tool_name']} binding -> invocation {other}"


def _a_tool_name_swapped(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = pick(rng, s)
    tools = sorted({i["tool_name"] for i in s.tool_invocations} - {binding["tool_name"]})
    binding["tool_name"] = rng.choice(tools)
    return ("invocation.tool_name",), f"tool_name -> {binding['tool_name']}"


_SHAPE = ("evidence.raw_path_shape", "evidence.raw_path")


def _a_bad_path(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = pick(rng, s, negative=False)
    path: str = binding["raw_path"]
    array = path[2 : path.index("[")]
    refs = refs_of(s, binding["source_invocation_id"])
    arrays = ("alerts", "logs", "evidence_blocks")
    choices = [
        ("field_subpath", path + rng.choice((".state", ".message", ".text", ".service", "[0]"))),
        ("wildcard", rng.choice((f"$.{array}[*]", f"$..{array}", f"$.{array}", f"$.{array}[]"))),
        ("noncanonical", rng.choice((f"$.{array}[-1]", f"$['{array}'][0]", f"$.{array}[00]"))),
        ("other_tool_array", f"$.{rng.choice([a for a in arrays if a != array])}[0]"),
        ("out_of_range", f"$.{array}[{len(refs) + rng.randrange(0, 40)}]"),
    ]
    kind, bad = rng.choice(choices)
    binding["raw_path"] = bad
    binding["evidence_excerpt"] = noise(rng, binding["evidence_excerpt"])
    expected = ("evidence.raw_path",) if kind == "out_of_range" else _SHAPE
    return expected, f"{kind}: raw_path {path} -> {bad}"


def _a_shifted_index(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = pick(rng, s, negative=False)
    refs = refs_of(s, binding["source_invocation_id"])
    others = [p for p in refs if p != binding["raw_path"]]
    target = rng.choice(others)
    if norm(binding["evidence_excerpt"]) in norm(refs[target]):
        return None
    binding["raw_path"] = target
    return ("evidence.excerpt_supported", "evidence.unique_item"), f"raw_path -> {target}"


def _a_foreign_excerpt(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = pick(rng, s)
    others = [i for i in s.tool_invocations if i["id"] != binding["source_invocation_id"]]
    source = rng.choice(others)
    text = rng.choice(list(refs_of(s, source["id"]).values()))
    excerpt = shorten(rng, text, 3) or text
    if norm(excerpt) in norm(ref_text(s, binding)):
        return None
    binding["evidence_excerpt"] = noise(rng, excerpt)
    return ("evidence.excerpt_supported",), f"excerpt from invocation {source['id']}: {excerpt!r}"


def _a_duplicate_item(rng: random.Random, s: demo.Scenario) -> Outcome:
    claim, binding = pick(rng, s, negative=False)
    copy_ = dict(binding, evidence_excerpt=noise(rng, binding["evidence_excerpt"]))
    target = rng.choice([c for c in claims_of(s) if c["claim_type"] != "negative_observation"])
    target["evidence_bindings"].insert(rng.randrange(len(target["evidence_bindings"]) + 1), copy_)
    where = f"{claim['claim_id']} -> {target['claim_id']}"
    rules = ("evidence.unique_item", "claim.duplicate_binding")
    return rules, f"{binding['raw_path']} bound again ({where})"


def _a_forbidden_field(rng: random.Random, s: demo.Scenario) -> Outcome:
    field = rng.choice(("diagnosis_summary", "user_facing_answer", "source_invocation_ids"))
    if field == "source_invocation_ids":
        _, binding = pick(rng, s)
        binding[field] = [binding["source_invocation_id"]]
    else:
        s.structured_output[field] = "order-service connection pool is exhausted."
    return ("contract.forbidden_fields",), f"added {field}"


def _a_empty_bindings(rng: random.Random, s: demo.Scenario) -> Outcome:
    claim = rng.choice(claims_of(s))
    claim["evidence_bindings"] = []
    return ("claim.bindings_nonempty",), f"{claim['claim_id']} has no bindings"


def _a_bad_field_type(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = pick(rng, s)
    field, value = rng.choice(
        (
            ("source_invocation_id", str(binding["source_invocation_id"])),
            ("source_invocation_id", float(binding["source_invocation_id"])),
            ("source_invocation_id", True),
            ("raw_path", ["$.alerts[0]"]),
            ("evidence_excerpt", None),
            ("tool_name", ""),
        )
    )
    binding[field] = value
    return ("binding.fields",), f"{field} -> {value!r}"


def _a_trivial_excerpt(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = pick(rng, s)
    binding["evidence_excerpt"] = rng.choice(("", "   ", "...", "\u2026", "ok", "92%"))
    return ("evidence.excerpt_supported",), f"excerpt -> {binding['evidence_excerpt']!r}"


A_MAKERS: tuple[tuple[str, Maker], ...] = (
    ("fake_id", _a_fake_id),
    ("other_tool_id", _a_other_tool_id),
    ("tool_name_swapped", _a_tool_name_swapped),
    ("bad_raw_path", _a_bad_path),
    ("shifted_index", _a_shifted_index),
    ("foreign_excerpt", _a_foreign_excerpt),
    ("duplicate_item", _a_duplicate_item),
    ("forbidden_field", _a_forbidden_field),
    ("empty_bindings", _a_empty_bindings),
    ("bad_field_type", _a_bad_field_type),
    ("trivial_excerpt", _a_trivial_excerpt),
)
