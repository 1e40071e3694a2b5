"""One check's walk over the executor's citations: every binding against the invocations.

Per binding: field types, a repeat of an earlier binding of the claim, then
raw_path shape and negative-evidence rules (they need no invocation), then
invocation resolution (lookup, or a unique back-fill of a missing id or
raw_path), the ref at raw_path, the excerpt, and array-item uniqueness. A
failure that makes later checks meaningless (no such invocation, wrong tool,
legacy record, no such ref) stops that binding. A disabled rule never fires;
a binding whose checks it cut short is reported ``skipped``. Ref texts are
normalised lazily, once per check, and only when cited.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from services.gatekeeper.input import Invocation, is_object
from services.gatekeeper.result import Binding
from services.gatekeeper.rule_ids import RuleId
from services.gatekeeper.ruleset import (
    SEVERITY_RANK,
    AnswerVersionParameters,
    ClaimsShapeParameters,
    ForbiddenFieldsParameters,
    Ruleset,
)
from tracebound.events import GateNote, RuleMeta

_ARRAY_ITEM = re.compile(r"^\$\.(?P<array>[A-Za-z_][A-Za-z0-9_]*)\[(?:0|[1-9][0-9]*)\]$")


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a rule set asks of every check, derived once per rule set."""

    on: frozenset[str]
    severities: dict[str, str]
    expected_version: str
    forbidden: tuple[str, ...]
    string_fields: tuple[str, ...]
    no_evidence: str
    arrays: dict[str, tuple[str, ...]]
    negative_types: frozenset[str]
    rules: tuple[RuleMeta, ...]


@lru_cache(maxsize=16)
def _plan(rs: Ruleset) -> _Plan:
    on = rs.enabled_ids
    forbidden = rs.params(RuleId.CONTRACT_FORBIDDEN_FIELDS, ForbiddenFieldsParameters).fields
    return _Plan(
        on=on,
        severities=rs.severities,
        expected_version=rs.params(
            RuleId.CONTRACT_ANSWER_VERSION, AnswerVersionParameters
        ).expected,
        forbidden=forbidden if RuleId.CONTRACT_FORBIDDEN_FIELDS in on else (),
        string_fields=rs.params(RuleId.CONTRACT_CLAIMS_SHAPE, ClaimsShapeParameters).string_fields,
        no_evidence=rs.contract.no_evidence_path,
        arrays=rs.contract.arrays_of(),
        negative_types=frozenset(rs.contract.negative_claim_types),
        rules=tuple(RuleMeta(**meta) for meta in rs.metadata()),
    )


def _field_problems(tool: Any, sid: Any, path: Any, excerpt: Any) -> list[str]:
    problems = []
    if type(tool) is not str or not tool:
        problems.append("tool_name must be a non-empty string")
    if type(excerpt) is not str:
        problems.append("evidence_excerpt must be a string")
    if path is not None and type(path) is not str:
        problems.append("raw_path must be a string or null")
    if sid is not None and type(sid) is not int:
        problems.append(f"source_invocation_id must be an integer or null, got {sid!r:.40}")
    return problems


class CheckRun:
    """Mutable state of one check; never outlives the call."""

    def __init__(self, ruleset: Ruleset, invocations: dict[int, Invocation]) -> None:
        self.plan = plan = _plan(ruleset)
        self.on = plan.on
        self.matcher = ruleset.matcher
        self.invocations = invocations
        self.rank = 0
        self.failed: set[str] = set()
        self.errors: list[GateNote] = []
        self.warnings: list[GateNote] = []
        self.bindings: list[Binding] = []
        self.items: dict[tuple[int, str], tuple[str, int]] = {}
        self.fills: list[tuple[int, int, int, str]] = []

    def fail(
        self,
        rule: RuleId,
        message: str,
        claim_id: str | None = None,
        rec: Binding | None = None,
        hint: dict[str, Any] | None = None,
    ) -> None:
        severity = self.plan.severities[rule]
        self.rank = max(self.rank, SEVERITY_RANK[severity])
        self.failed.add(rule)
        error = GateNote(
            rule=rule,
            severity=severity,
            claim_id=claim_id,
            binding_index=None if rec is None else rec.binding_index,
            message=message,
            hint=hint,
        )
        self.errors.append(error)
        if rec is not None and rec.status != "fail":
            rec.status, rec.rule, rec.reason = "fail", rule, message

    def forbidden_in(
        self, obj: Mapping[str, Any], where: str, claim_id: str | None, rec: Binding | None
    ) -> None:
        for name in self.plan.forbidden:
            if name in obj:
                self.fail(
                    RuleId.CONTRACT_FORBIDDEN_FIELDS, f"{where} carries {name}", claim_id, rec
                )

    def output(self, so: Any) -> None:
        expected = self.plan.expected_version
        rule = RuleId.CONTRACT_ANSWER_VERSION
        if not is_object(so):
            if rule in self.on:
                what = "missing" if so is None else f"a {type(so).__name__}, not an object"
                self.fail(rule, f"executor_structured_output is {what}")
            return
        version = so.get("answer_version")
        if version != expected and rule in self.on:
            self.fail(rule, f"answer_version is {version!r}, expected {expected!r}")
        self.forbidden_in(so, "executor_structured_output", None, None)
        claims = so.get("claims")
        if type(claims) is list:
            for index, claim in enumerate(claims):
                self.claim(index, claim)
        elif version == expected and RuleId.CONTRACT_CLAIMS_SHAPE in self.on:
            self.fail(RuleId.CONTRACT_CLAIMS_SHAPE, "claims must be an array")

    def claim(self, index: int, claim: Any) -> None:
        shape_on = RuleId.CONTRACT_CLAIMS_SHAPE in self.on
        if not is_object(claim):
            if shape_on:
                self.fail(RuleId.CONTRACT_CLAIMS_SHAPE, f"claims[{index}] is not an object")
            return
        raw_id = claim.get("claim_id")
        claim_id = raw_id if type(raw_id) is str and raw_id else f"claims[{index}]"
        self.forbidden_in(claim, f"claim {claim_id}", claim_id, None)
        if shape_on:
            bad = [f for f in self.plan.string_fields if type(claim.get(f)) is not str]
            if bad:
                self.fail(
                    RuleId.CONTRACT_CLAIMS_SHAPE, f"{', '.join(bad)} must be strings", claim_id
                )
        bindings = claim.get("evidence_bindings")
        if type(bindings) is not list:
            if shape_on:
                self.fail(
                    RuleId.CONTRACT_CLAIMS_SHAPE, "evidence_bindings must be an array", claim_id
                )
            return
        if not bindings:
            if RuleId.CLAIM_BINDINGS_NONEMPTY in self.on:
                self.fail(
                    RuleId.CLAIM_BINDINGS_NONEMPTY, "claim has no evidence_bindings", claim_id
                )
            return
        negative = claim.get("claim_type") in self.plan.negative_types
        seen: dict[tuple[str, int | None, str | None, str], int] = {}
        for b_index, binding in enumerate(bindings):
            rec = self.binding(index, claim_id, negative, b_index, binding, seen=seen)
            if rec.status == "pass" and rec.matched_text is None:
                rec.status = "skipped"

    def binding(  # noqa: C901, PLR0911, PLR0912  # the binding rules in order; each failure ends the check
        self,
        c_index: int,
        claim_id: str,
        negative: bool,
        b_index: int,
        b: Any,
        *,
        seen: dict[tuple[str, int | None, str | None, str], int],
    ) -> Binding:
        """Check one binding; returns its ``checked_bindings`` entry.

        ``seen`` maps the bindings already read in this claim to their index: a
        repeat is a duplicate and is checked no further (a citation counted twice,
        ``$.no_evidence`` included, would look like more evidence than there is).
        """
        fields: Mapping[str, Any] = b if is_object(b) else {}
        tool, sid = fields.get("tool_name"), fields.get("source_invocation_id")
        path, excerpt = fields.get("raw_path"), fields.get("evidence_excerpt")
        rec = Binding(claim_id, b_index, tool, sid, path)
        self.bindings.append(rec)
        if not is_object(b):
            if RuleId.BINDING_FIELDS in self.on:
                self.fail(RuleId.BINDING_FIELDS, "binding is not an object", claim_id, rec)
            return rec
        self.forbidden_in(b, "binding", claim_id, rec)
        if (
            type(tool) is not str
            or not tool
            or type(excerpt) is not str
            or (path is not None and type(path) is not str)
            or (sid is not None and type(sid) is not int)
        ):
            if RuleId.BINDING_FIELDS in self.on:
                problems = "; ".join(_field_problems(tool, sid, path, excerpt))
                self.fail(RuleId.BINDING_FIELDS, problems, claim_id, rec)
            return rec
        excerpt_norm = self.matcher.normalize(excerpt)
        earlier = seen.setdefault((tool, sid, path, excerpt_norm), b_index)
        if earlier != b_index and RuleId.CLAIM_DUPLICATE_BINDING in self.on:
            message = f"binding repeats binding {earlier} of this claim"
            self.fail(RuleId.CLAIM_DUPLICATE_BINDING, message, claim_id, rec)
            return rec
        if path is not None:
            self.path_rules(tool, path, negative, claim_id, rec)
        inv = None if sid is None else self.resolve(sid, tool, claim_id, rec)
        if sid is not None and inv is None:
            return rec
        verified = False
        if inv is None or path is None:
            found = self.backfill(inv, tool, path, excerpt_norm, claim_id=claim_id, rec=rec)
            if found is None:
                return rec
            if path is None:
                self.path_rules(tool, found[1], negative, claim_id, rec)
            inv, path = found
            self.fills.append((c_index, b_index, inv.id, path))
            verified = True
        ref = inv.refs.get(path)
        if ref is None:
            self.missing_ref(inv, path, negative, claim_id, rec)
            return rec
        rec.matched_text = ref.text
        if not verified and RuleId.EVIDENCE_EXCERPT_SUPPORTED in self.on:
            if ref.norm is None:
                ref.norm = self.matcher.normalize(ref.text)
            if not self.matcher.supports(excerpt_norm, ref.norm):
                message = f"evidence_excerpt is not supported by the ref text at {path}"
                hint = self.matcher.hint(excerpt, ref.text)
                self.fail(RuleId.EVIDENCE_EXCERPT_SUPPORTED, message, claim_id, rec, hint)
        if path != self.plan.no_evidence and RuleId.EVIDENCE_UNIQUE_ITEM in self.on:
            first = self.items.setdefault((inv.id, path), (claim_id, b_index))
            if first != (claim_id, b_index):
                message = f"{path} of invocation {inv.id} is already bound by {first[0]}"
                self.fail(
                    RuleId.EVIDENCE_UNIQUE_ITEM, f"{message} binding {first[1]}", claim_id, rec
                )
        return rec

    def path_rules(self, tool: str, path: str, negative: bool, claim_id: str, rec: Binding) -> None:
        no_evidence = self.plan.no_evidence
        if path == no_evidence:
            if not negative and RuleId.NEGATIVE_CLAIM_TYPE in self.on:
                message = f"{no_evidence} supports only negative claim types, not this claim"
                self.fail(RuleId.NEGATIVE_CLAIM_TYPE, message, claim_id, rec)
            return
        if RuleId.EVIDENCE_RAW_PATH_SHAPE in self.on:
            match = _ARRAY_ITEM.match(path)
            arrays = self.plan.arrays.get(tool, ())
            if match is None or match["array"] not in arrays:
                own = ", ".join(f"$.{a}[i]" for a in arrays) or "no declared evidence array"
                message = f"raw_path {path!r} is neither an item of {tool}'s array ({own})"
                self.fail(
                    RuleId.EVIDENCE_RAW_PATH_SHAPE, f"{message} nor {no_evidence}", claim_id, rec
                )
        if negative and RuleId.NEGATIVE_NO_EVIDENCE_ONLY in self.on:
            message = f"negative claim binds {path!r}; only {no_evidence} may support it"
            self.fail(RuleId.NEGATIVE_NO_EVIDENCE_ONLY, message, claim_id, rec)

    def resolve(self, sid: int, tool: str, claim_id: str, rec: Binding) -> Invocation | None:
        inv = self.invocations.get(sid)
        if inv is None:
            if RuleId.INVOCATION_EXISTS in self.on:
                message = f"source_invocation_id {sid} names no tool invocation of this session"
                self.fail(RuleId.INVOCATION_EXISTS, message, claim_id, rec)
            return None
        if inv.tool_name != tool:
            if RuleId.INVOCATION_TOOL_NAME in self.on:
                message = f"invocation {sid} is {inv.tool_name!r}, binding says {tool!r}"
                self.fail(RuleId.INVOCATION_TOOL_NAME, message, claim_id, rec)
            return None
        if inv.legacy:
            if RuleId.INVOCATION_LEGACY_REFS in self.on:
                message = f"invocation {sid} has no evidence_refs (legacy record); cannot verify"
                self.fail(RuleId.INVOCATION_LEGACY_REFS, message, claim_id, rec)
            return None
        return inv

    def backfill(
        self,
        inv: Invocation | None,
        tool: str,
        path: str | None,
        excerpt_norm: str,
        *,
        claim_id: str,
        rec: Binding,
    ) -> tuple[Invocation, str] | None:
        """The unique (invocation, raw_path) whose ref supports the excerpt, else None."""
        rule = RuleId.INVOCATION_BACKFILL
        if rule not in self.on:
            return None
        found: list[tuple[Invocation, str]] = []
        for candidate in [inv] if inv is not None else self.invocations.values():
            if candidate.tool_name != tool or candidate.legacy:
                continue
            refs = candidate.refs
            for ref_path in refs if path is None else (path,) if path in refs else ():
                ref = refs[ref_path]
                if ref.norm is None:
                    ref.norm = self.matcher.normalize(ref.text)
                if self.matcher.supports(excerpt_norm, ref.norm):
                    found.append((candidate, ref_path))
        missing = " and ".join(
            name
            for name, value in (("source_invocation_id", inv), ("raw_path", path))
            if value is None
        )
        if len(found) != 1:
            which = ", ".join(f"{i.id} {p}" for i, p in found[:5]) or "none"
            message = (
                f"cannot back-fill {missing}: {len(found)} invocation refs match "
                f"tool_name + raw_path + evidence_excerpt ({which})"
            )
            self.fail(rule, message, claim_id, rec)
            return None
        chosen, chosen_path = found[0]
        rec.source_invocation_id, rec.raw_path, rec.status = chosen.id, chosen_path, "backfilled"
        self.warnings.append(
            GateNote(
                rule=rule,
                claim_id=claim_id,
                binding_index=rec.binding_index,
                message=f"back-filled {missing} from the unique matching ref",
                source_invocation_id=chosen.id,
                raw_path=chosen_path,
            )
        )
        return found[0]

    def missing_ref(
        self, inv: Invocation, path: str, negative: bool, claim_id: str, rec: Binding
    ) -> None:
        if RuleId.EVIDENCE_RAW_PATH in self.on:
            count = len(inv.refs)
            message = (
                f"raw_path {path} is not among the {count} evidence_refs of invocation {inv.id}"
            )
            self.fail(RuleId.EVIDENCE_RAW_PATH, message, claim_id, rec)
        if (
            negative
            and path == self.plan.no_evidence
            and RuleId.NEGATIVE_NO_EVIDENCE_ONLY in self.on
        ):
            message = f"invocation {inv.id} returned no {path} ref (it had hits)"
            self.fail(RuleId.NEGATIVE_NO_EVIDENCE_ONLY, message, claim_id, rec)
