"""Seeded, reproducible mutations of the demo scenarios for the gatekeeper.

Families (each case mutates a fresh copy of one correct scenario):

* ``A`` structural: fake or other-tool invocation ids, bad raw_paths, excerpts
  from another invocation, duplicate array items, forbidden fields. Must reject.
* ``B`` excerpt edits: a digit, number, unit, entity (swapped for another value
  of the same tool output), negation or timestamp changed. Must reject.
* ``D`` negative-evidence misuse: negative claims bound to positive refs,
  ``$.no_evidence`` cited on an invocation with hits, mixed bindings, edited
  no-evidence text. Must reject.
* ``F`` benign controls: case, whitespace, full-width, shortened and
  ellipsis-joined excerpts, whole fields of an item merged in order, wrapping
  quotes, back-fillable missing ids or raw_paths. Must pass.

The oracle here is independent of the gatekeeper: a B mutant is kept only when
its NFKC/casefold/whitespace-normalised text differs from the original and is
not a substring of the ref text, so a "caught" count is never inflated by
mutants that are still true. Randomness comes only from ``random.Random(seed)``
and list order, never from set or hash order.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tests.support import demo_evidence as demo

DEFAULT_SEED = 20260708
NEGATIONS = ("not", "no", "never", "none", "nothing", "without", "cannot", "neither", "nor")


@dataclass(frozen=True)
class Case:
    family: str
    kind: str
    structured_output: dict[str, Any]
    tool_invocations: list[dict[str, Any]]
    expected_severity: str  # "reject" for A/B/D, "none" for F
    expected_rules: tuple[str, ...]  # at least one must fire (empty for F)
    detail: str


Outcome = tuple[tuple[str, ...], str] | None
Maker = Callable[[random.Random, demo.Scenario], Outcome]


def norm(text: str) -> str:
    """The oracle's own normalisation: NFKC, casefold, whitespace runs to one space."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


# -- scenario access -------------------------------------------------------------


def _refs(scenario: demo.Scenario, inv_id: int) -> dict[str, str]:
    for inv in scenario.tool_invocations:
        if inv["id"] == inv_id:
            refs = inv["retrieval_details"]["evidence_refs"]
            return {ref["raw_path"]: ref["text"] for ref in refs}
    return {}


def _tool(scenario: demo.Scenario, inv_id: int) -> str:
    return str(next(i["tool_name"] for i in scenario.tool_invocations if i["id"] == inv_id))


def _claims(scenario: demo.Scenario) -> list[dict[str, Any]]:
    claims: list[dict[str, Any]] = scenario.structured_output["claims"]
    return claims


class NotApplicable(Exception):
    """This mutation does not fit the chosen scenario; the generator tries another."""


def _pick(
    rng: random.Random, scenario: demo.Scenario, *, negative: bool | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A random (claim, binding); ``negative`` filters on negative_observation claims."""
    pairs = [
        (c, b)
        for c in _claims(scenario)
        for b in c["evidence_bindings"]
        if negative is None or (c["claim_type"] == "negative_observation") == negative
    ]
    if not pairs:
        raise NotApplicable
    return rng.choice(pairs)


def _ref_text(scenario: demo.Scenario, binding: dict[str, Any]) -> str:
    return _refs(scenario, binding["source_invocation_id"])[binding["raw_path"]]


# -- benign transforms -----------------------------------------------------------


def _fullwidth(rng: random.Random, text: str) -> str:
    return "".join(
        chr(ord(c) + 0xFEE0) if "!" <= c <= "~" and rng.random() < 0.5 else c for c in text
    )


def _whitespace(rng: random.Random, text: str) -> str:
    runs = (" ", "  ", "\t", "\n", " \u3000", "\u00a0", " \n ")
    spaced = "".join(rng.choice(runs) if c == " " and rng.random() < 0.6 else c for c in text)
    return rng.choice(("", " ", "\n", "\t ")) + spaced + rng.choice(("", " ", "\n"))


def _case(rng: random.Random, text: str) -> str:
    return rng.choice((text.upper(), text.lower(), text.swapcase(), text.title()))


def _quoted(rng: random.Random, text: str) -> str:
    opening, closing = rng.choice((('"', '"'), ("\u201c", "\u201d"), ("'", "'"), ("「", "」")))
    kind = rng.randrange(3)
    if kind == 0:
        return f"{opening}{text}{closing}"
    period = rng.choice((".", "\u3002"))
    return f"{opening}{text}{closing}{period}" if kind == 1 else f"{text}{period}"


def noise(rng: random.Random, text: str) -> str:
    """Zero or more presentation-only transforms; the normalised text is unchanged."""
    for transform in (_case, _whitespace, _fullwidth):
        if rng.random() < 0.4:
            text = transform(rng, text)
    return text


def _is_negation(token: str) -> bool:
    word = re.sub(r"[^\w']", "", token.casefold())
    return word in NEGATIONS or word.endswith("n't")


def shorten(rng: random.Random, text: str, min_tokens: int = 2) -> str | None:
    """A contiguous run of whole tokens, not starting right after a negation."""
    tokens = text.split(" ")
    if len(tokens) < min_tokens + 1:
        return None
    for _ in range(10):
        start = rng.randrange(0, len(tokens) - min_tokens + 1)
        end = rng.randrange(start + min_tokens, len(tokens) + 1)
        if (start, end) == (0, len(tokens)) or (start > 0 and _is_negation(tokens[start - 1])):
            continue
        piece = " ".join(tokens[start:end])
        if len(norm(piece)) >= 8:
            return piece
    return None


def ellipsize(rng: random.Random, text: str) -> str | None:
    """Two or three in-order token runs joined by an ellipsis; no gap hides a negation."""
    tokens = text.split(" ")
    if len(tokens) < 4:
        return None
    for _ in range(10):
        cuts = sorted(rng.sample(range(1, len(tokens)), k=min(len(tokens) - 1, rng.choice((3, 4)))))
        bounds = [0, *cuts, len(tokens)]
        runs = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
        kept = runs[::2]
        gaps = runs[1::2]
        parts = [" ".join(tokens[a:b]) for a, b in kept]
        if any(len(norm(p)) < 6 for p in parts) or len(parts) < 2:
            continue
        if any(_is_negation(tokens[i]) for a, b in gaps for i in range(a, b)):
            continue
        joiner = rng.choice((" ... ", "...", " \u2026 ", "\u2026", " ...", "... "))
        return joiner.join(parts)
    return None


# -- A: structural ------------------------------------------------------------------


def _a_fake_id(rng: random.Random, s: demo.Scenario) -> Outcome:
    claim, binding = _pick(rng, s)
    real = {inv["id"] for inv in s.tool_invocations}
    fake = rng.choice([n for n in (0, -1, 1, 516, 521, 999, 10**9, 1517, 5180) if n not in real])
    binding.update(
        source_invocation_id=fake, evidence_excerpt=noise(rng, binding["evidence_excerpt"])
    )
    return ("invocation.exists",), f"{claim['claim_id']}: source_invocation_id -> {fake}"


def _a_other_tool_id(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = _pick(rng, s)
    others = [i["id"] for i in s.tool_invocations if i["tool_name"] != binding["tool_name"]]
    other = rng.choice(others)
    binding["source_invocation_id"] = other
    return ("invocation.tool_name",), f"{binding['tool_name']} binding -> invocation {other}"


def _a_tool_name_swapped(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = _pick(rng, s)
    tools = sorted({i["tool_name"] for i in s.tool_invocations} - {binding["tool_name"]})
    binding["tool_name"] = rng.choice(tools)
    return ("invocation.tool_name",), f"tool_name -> {binding['tool_name']}"


_SHAPE = ("evidence.raw_path_shape", "evidence.raw_path")


def _a_bad_path(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = _pick(rng, s, negative=False)
    path: str = binding["raw_path"]
    array = path[2 : path.index("[")]
    refs = _refs(s, binding["source_invocation_id"])
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
    _, binding = _pick(rng, s, negative=False)
    refs = _refs(s, binding["source_invocation_id"])
    others = [p for p in refs if p != binding["raw_path"]]
    target = rng.choice(others)
    if norm(binding["evidence_excerpt"]) in norm(refs[target]):
        return None
    binding["raw_path"] = target
    return ("evidence.excerpt_supported", "evidence.unique_item"), f"raw_path -> {target}"


def _a_foreign_excerpt(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = _pick(rng, s)
    others = [i for i in s.tool_invocations if i["id"] != binding["source_invocation_id"]]
    source = rng.choice(others)
    text = rng.choice(list(_refs(s, source["id"]).values()))
    excerpt = shorten(rng, text, 3) or text
    if norm(excerpt) in norm(_ref_text(s, binding)):
        return None
    binding["evidence_excerpt"] = noise(rng, excerpt)
    return ("evidence.excerpt_supported",), f"excerpt from invocation {source['id']}: {excerpt!r}"


def _a_duplicate_item(rng: random.Random, s: demo.Scenario) -> Outcome:
    claim, binding = _pick(rng, s, negative=False)
    copy_ = dict(binding, evidence_excerpt=noise(rng, binding["evidence_excerpt"]))
    target = rng.choice([c for c in _claims(s) if c["claim_type"] != "negative_observation"])
    target["evidence_bindings"].insert(rng.randrange(len(target["evidence_bindings"]) + 1), copy_)
    where = f"{claim['claim_id']} -> {target['claim_id']}"
    return ("evidence.unique_item",), f"{binding['raw_path']} bound again ({where})"


def _a_forbidden_field(rng: random.Random, s: demo.Scenario) -> Outcome:
    field = rng.choice(("diagnosis_summary", "user_facing_answer", "source_invocation_ids"))
    if field == "source_invocation_ids":
        _, binding = _pick(rng, s)
        binding[field] = [binding["source_invocation_id"]]
    else:
        s.structured_output[field] = "order-service connection pool is exhausted."
    return ("contract.forbidden_fields",), f"added {field}"


def _a_empty_bindings(rng: random.Random, s: demo.Scenario) -> Outcome:
    claim = rng.choice(_claims(s))
    claim["evidence_bindings"] = []
    return ("claim.bindings_nonempty",), f"{claim['claim_id']} has no bindings"


def _a_bad_field_type(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = _pick(rng, s)
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
    _, binding = _pick(rng, s)
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


# -- B: excerpt edits -----------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\d.])")
_UNIT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(\s?)(ms|s|%|GB|MB|m)(?![A-Za-z0-9])")
_UNIT_SWAPS: dict[str, tuple[str, ...]] = {
    "ms": ("s", "us", "min"),
    "s": ("ms", "m"),
    "%": ("\u2030",),
    "GB": ("MB", "TB"),
    "MB": ("GB", "KB"),
    "m": ("h", "s", "ms"),
}
_ENTITIES: tuple[tuple[str, str], ...] = (
    ("pod", r"pod-[a-z]+-service-[0-9a-z]+-[0-9a-z]+"),
    ("service", r"(?<![\w-])[a-z]+-service(?![\w-])"),
    ("alert", r"\b(?:HighCPUUsage|HighMemoryUsage|SlowResponse)\b"),
    ("level", r"\b(?:ERROR|WARN|INFO)\b"),
    ("runbook", r"(?<=Runbook )[a-z-]+"),
)
_TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2})([ T])(\d{2}:\d{2}:\d{2})")

Mutator = Callable[[random.Random, str, list[str]], str | None]


def _digit(rng: random.Random, base: str, _: list[str]) -> str | None:
    positions = [i for i, c in enumerate(base) if c.isdigit()]
    if not positions:
        return None
    i = rng.choice(positions)
    return base[:i] + rng.choice([d for d in "0123456789" if d != base[i]]) + base[i + 1 :]


def _number(rng: random.Random, base: str, _: list[str]) -> str | None:
    matches = list(_NUMBER.finditer(base))
    if not matches:
        return None
    m = rng.choice(matches)
    text = m.group()
    if "." in text:
        decimals = len(text.split(".")[1])
        step = rng.choice((0.1, 0.2, 0.5, 1.0, 2.0)) * rng.choice((-1, 1))
        new = f"{abs(float(text) + step):.{decimals}f}"
    else:
        value = int(text)
        new = str(rng.choice((value + 1, abs(value - 1), value * 10, value + rng.randint(2, 99))))
    return None if new == text else base[: m.start()] + new + base[m.end() :]


def _unit(rng: random.Random, base: str, _: list[str]) -> str | None:
    matches = list(_UNIT.finditer(base))
    if not matches:
        return None
    m = rng.choice(matches)
    unit = rng.choice(_UNIT_SWAPS[m.group(3)])
    return base[: m.start(3)] + unit + base[m.end(3) :]


def _entity(rng: random.Random, base: str, same_output: list[str]) -> str | None:
    options: list[tuple[re.Match[str], list[str]]] = []
    for _, pattern in _ENTITIES:
        values = list(dict.fromkeys(v for text in same_output for v in re.findall(pattern, text)))
        for m in re.finditer(pattern, base):
            others = [v for v in values if v != m.group()]
            if others:
                options.append((m, others))
    if not options:
        return None
    m, others = rng.choice(options)
    return base[: m.start()] + rng.choice(others) + base[m.end() :]


def _negation(rng: random.Random, base: str, _: list[str]) -> str | None:
    removable = list(re.finditer(r"\b(?:not|no|never)\s+", base, re.IGNORECASE))
    if removable and rng.random() < 0.6:
        m = rng.choice(removable)
        return base[: m.start()] + base[m.end() :]
    verbs = list(re.finditer(r"\b(?:is|was|are|were|has|have|did|does|can)\s+", base))
    if verbs and rng.random() < 0.5:
        m = rng.choice(verbs)
        return base[: m.end()] + "not " + base[m.end() :]
    tokens = base.split(" ")
    if len(tokens) < 2:
        return None
    i = rng.randrange(1, len(tokens))
    return " ".join([*tokens[:i], rng.choice(("not", "no", "never")), *tokens[i:]])


def _timestamp(rng: random.Random, base: str, _: list[str]) -> str | None:
    matches = list(_TIMESTAMP.finditer(base))
    if not matches:
        return None
    m = rng.choice(matches)
    moment = datetime.strptime(f"{m.group(1)} {m.group(3)}", "%Y-%m-%d %H:%M:%S")
    seconds = rng.choice((1, 2, 30, 60, 300, 3600, 86400)) * rng.choice((-1, 1))
    shifted = moment + timedelta(seconds=seconds)
    new = shifted.strftime(f"%Y-%m-%d{m.group(2)}%H:%M:%S")
    return base[: m.start()] + new + base[m.end() :]


def _excerpt_edit(mutate: Mutator) -> Maker:
    def make(rng: random.Random, s: demo.Scenario) -> Outcome:
        _, binding = _pick(rng, s)
        ref = _ref_text(s, binding)
        base = rng.choice((binding["evidence_excerpt"], ref, shorten(rng, ref, 3) or ref))
        same_output = list(_refs(s, binding["source_invocation_id"]).values())
        mutated = mutate(rng, base, same_output)
        if mutated is None or norm(mutated) == norm(base) or norm(mutated) in norm(ref):
            return None
        binding["evidence_excerpt"] = noise(rng, mutated)
        return ("evidence.excerpt_supported",), f"{base!r} -> {mutated!r}"

    return make


B_MAKERS: tuple[tuple[str, Maker], ...] = (
    ("digit", _excerpt_edit(_digit)),
    ("number", _excerpt_edit(_number)),
    ("unit", _excerpt_edit(_unit)),
    ("entity", _excerpt_edit(_entity)),
    ("negation", _excerpt_edit(_negation)),
    ("timestamp", _excerpt_edit(_timestamp)),
)


# -- D: negative-evidence misuse ---------------------------------------------------------

_POSITIVE_IDS = (demo.METRICS_ID, demo.LOGS_ID, demo.KNOWLEDGE_ID)
_POSITIVE_TYPES = ("observation", "symptom", "root_cause")


def _negative_claim(rng: random.Random, s: demo.Scenario) -> dict[str, Any]:
    """An existing negative claim, or a new correct one appended to the output."""
    negatives = [c for c in _claims(s) if c["claim_type"] == "negative_observation"]
    if negatives and rng.random() < 0.7:
        return rng.choice(negatives)
    new = demo.claim(
        f"claim-neg-{rng.randrange(100)}",
        "negative_observation",
        demo.NEGATIVE_TEXT,
        dict(demo.NO_INVENTORY_LOGS),
    )
    _claims(s).append(new)
    return new


def _positive_binding(rng: random.Random, s: demo.Scenario) -> dict[str, Any]:
    """A correct binding of a random positive ref (excerpt shortened and noised)."""
    inv_id = rng.choice(_POSITIVE_IDS)
    path, text = rng.choice(list(_refs(s, inv_id).items()))
    return demo.bind(inv_id, path, noise(rng, shorten(rng, text, 3) or text))


def _d_binds_positive(rng: random.Random, s: demo.Scenario) -> Outcome:
    claim = _negative_claim(rng, s)
    binding = _positive_binding(rng, s)
    claim["evidence_bindings"] = [binding]
    return ("negative.no_evidence_only",), f"{claim['claim_id']} -> {binding['raw_path']}"


def _d_no_evidence_on_hits(rng: random.Random, s: demo.Scenario) -> Outcome:
    claim = _negative_claim(rng, s)
    inv_id = rng.choice(_POSITIVE_IDS)
    tool = _tool(s, inv_id)
    excerpt = f"{tool} returned no evidence; evidence_status=no_evidence; total=0"
    binding = demo.bind(inv_id, "$.no_evidence", noise(rng, excerpt))
    claim["evidence_bindings"] = [binding]
    expected = ("evidence.raw_path", "negative.no_evidence_only")
    return expected, f"$.no_evidence on invocation {inv_id} ({tool}, had hits)"


def _d_mixed(rng: random.Random, s: demo.Scenario) -> Outcome:
    claim = _negative_claim(rng, s)
    binding = _positive_binding(rng, s)
    bindings = claim["evidence_bindings"]
    bindings.insert(rng.randrange(len(bindings) + 1), binding)
    return ("negative.no_evidence_only",), f"{claim['claim_id']} also binds {binding['raw_path']}"


def _d_positive_cites_no_evidence(rng: random.Random, s: demo.Scenario) -> Outcome:
    binding = dict(demo.NO_INVENTORY_LOGS)
    binding["evidence_excerpt"] = noise(rng, binding["evidence_excerpt"])
    positives = [c for c in _claims(s) if c["claim_type"] != "negative_observation"]
    if positives and rng.random() < 0.6:
        claim = rng.choice(positives)
        bindings = claim["evidence_bindings"]
        if rng.random() < 0.5:
            bindings[rng.randrange(len(bindings))] = binding
        else:
            bindings.append(binding)
    else:
        kind = rng.choice(_POSITIVE_TYPES)
        claim = demo.claim("claim-pos", kind, "inventory-service is healthy.", binding)
        _claims(s).append(claim)
    return (
        "negative.claim_type",
    ), f"{claim['claim_type']} {claim['claim_id']} cites $.no_evidence"


def _d_relabel(rng: random.Random, s: demo.Scenario) -> Outcome:
    positives = [c for c in _claims(s) if c["claim_type"] != "negative_observation"]
    if not positives:
        raise NotApplicable
    claim = rng.choice(positives)
    claim["claim_type"] = "negative_observation"
    return ("negative.no_evidence_only",), f"{claim['claim_id']} relabelled negative_observation"


_NO_EVIDENCE_EDITS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("total=0", ("total=1", "total=3", "total=12", "total=00")),
    ("inventory-service", ("order-service", "payment-service", "user-service")),
    ("returned no evidence", ("returned evidence", "returned new evidence")),
    ("no matching logs", ("matching logs", "23 matching logs")),
    ("evidence_status=no_evidence", ("evidence_status=supported",)),
    ("topic=application-logs", ("topic=audit-logs",)),
    ("HikariCP", ("Redis", "HikariPool-1")),
)


def _d_no_evidence_edit(rng: random.Random, s: demo.Scenario) -> Outcome:
    claim = _negative_claim(rng, s)
    base = rng.choice((demo.NO_INVENTORY_LOGS["evidence_excerpt"], demo.NO_EVIDENCE_TEXT))
    old, news = rng.choice([edit for edit in _NO_EVIDENCE_EDITS if edit[0] in base])
    mutated = base.replace(old, rng.choice(news), 1)
    if norm(mutated) in norm(demo.NO_EVIDENCE_TEXT):
        return None
    binding = dict(demo.NO_INVENTORY_LOGS, evidence_excerpt=noise(rng, mutated))
    claim["evidence_bindings"] = [binding]
    return ("evidence.excerpt_supported",), f"no-evidence excerpt {old!r} edited"


D_MAKERS: tuple[tuple[str, Maker], ...] = (
    ("negative_binds_positive", _d_binds_positive),
    ("no_evidence_on_hit_invocation", _d_no_evidence_on_hits),
    ("negative_mixed_bindings", _d_mixed),
    ("positive_claim_cites_no_evidence", _d_positive_cites_no_evidence),
    ("positive_relabelled_negative", _d_relabel),
    ("no_evidence_excerpt_edit", _d_no_evidence_edit),
)


# -- F: benign controls --------------------------------------------------------------------

_FIELD_SPLIT = re.compile(r"\s*[,;]\s*")


def _field_subset(rng: random.Random, s: demo.Scenario) -> Outcome:
    """Several whole fields of the cited item, in ref order, others left out."""
    _, binding = _pick(rng, s)
    fields = [f for f in _FIELD_SPLIT.split(_ref_text(s, binding)) if len(f) >= 6]
    if len(fields) < 3:
        raise NotApplicable
    kept = sorted(rng.sample(range(len(fields)), k=rng.randint(2, len(fields) - 1)))
    excerpt = rng.choice((", ", "; ")).join(fields[i] for i in kept)
    binding["evidence_excerpt"] = noise(rng, excerpt)
    return (), f"{binding['raw_path']}: fields {kept} of {len(fields)}: {excerpt!r}"


Rewrite = Callable[[random.Random, str], str | None]


def _combined(rng: random.Random, text: str) -> str | None:
    cut = rng.choice((shorten, ellipsize))(rng, text) or text
    return _quoted(rng, noise(rng, cut)) if rng.random() < 0.3 else noise(rng, cut)


def _rewrite_excerpts(rewrite: Rewrite) -> Maker:
    def make(rng: random.Random, s: demo.Scenario) -> Outcome:
        bindings = [b for c in _claims(s) for b in c["evidence_bindings"]]
        chosen = rng.sample(bindings, k=rng.randint(1, len(bindings)))
        changed = []
        for binding in chosen:
            new = rewrite(rng, binding["evidence_excerpt"])
            if new is not None and new != binding["evidence_excerpt"]:
                binding["evidence_excerpt"] = new
                changed.append(f"{binding['raw_path']}: {new!r}")
        return ((), "; ".join(changed)) if changed else None

    return make


def _f_missing_id(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = _pick(rng, s)
    if rng.random() < 0.5:
        del binding["source_invocation_id"]
    else:
        binding["source_invocation_id"] = None
    binding["evidence_excerpt"] = noise(rng, binding["evidence_excerpt"])
    return (), f"{binding['raw_path']}: source_invocation_id removed"


def _f_missing_raw_path(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = _pick(rng, s)
    path = binding.pop("raw_path")
    if rng.random() < 0.5:
        binding["raw_path"] = None
    if rng.random() < 0.3:
        binding["source_invocation_id"] = None
    binding["evidence_excerpt"] = noise(rng, binding["evidence_excerpt"])
    return (), f"{path}: raw_path removed"


F_MAKERS: tuple[tuple[str, Maker], ...] = (
    ("case", _rewrite_excerpts(_case)),
    ("whitespace", _rewrite_excerpts(_whitespace)),
    ("fullwidth", _rewrite_excerpts(_fullwidth)),
    ("shortened", _rewrite_excerpts(shorten)),
    ("ellipsis", _rewrite_excerpts(ellipsize)),
    ("quoted", _rewrite_excerpts(_quoted)),
    ("combined", _rewrite_excerpts(_combined)),
    ("field_subset", _field_subset),
    ("missing_id", _f_missing_id),
    ("missing_raw_path", _f_missing_raw_path),
)


# -- generator --------------------------------------------------------------------------------

MAKERS: dict[str, tuple[tuple[str, Maker], ...]] = {
    "A": A_MAKERS,
    "B": B_MAKERS,
    "D": D_MAKERS,
    "F": F_MAKERS,
}
EXPECTED_SEVERITY = {"A": "reject", "B": "reject", "D": "reject", "F": "none"}


def generate(family: str, count: int = 250, seed: int = DEFAULT_SEED) -> list[Case]:
    """``count`` cases of one family; the same seed always yields the same cases.

    Kinds are visited round-robin so every kind is represented; a mutation that
    does not fit the drawn scenario is redrawn.
    """
    rng = random.Random(f"{seed}/{family}")
    makers = MAKERS[family]
    cases: list[Case] = []
    attempts = 0
    while len(cases) < count:
        attempts += 1
        if attempts > count * 50:
            raise RuntimeError(f"family {family}: only {len(cases)} cases after {attempts} draws")
        kind, make = makers[len(cases) % len(makers)]
        scenario = rng.choice(demo.scenarios())
        try:
            outcome = make(rng, scenario)
        except NotApplicable:
            continue
        if outcome is None:
            continue
        rules, detail = outcome
        cases.append(
            Case(
                family=family,
                kind=kind,
                structured_output=scenario.structured_output,
                tool_invocations=scenario.tool_invocations,
                expected_severity=EXPECTED_SEVERITY[family],
                expected_rules=rules,
                detail=f"{scenario.name}: {detail}",
            )
        )
    return cases
