"""The gatekeeper rule set: ``rules/gatekeeper-rules.json`` loaded and validated.

Why a file: rule metadata, severities, thresholds and field names are reviewed
and versioned as data, while each rule's logic stays deterministic code in
``check.py``. Why so strict: a typo in a rules file must never silently switch a
rule off, so an unknown severity, a duplicate id, a rule without an
implementation, an implemented rule missing from the file or a bad parameter
all raise :class:`~tracebound.errors.ConfigError` naming the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, model_validator

from services.common.negation import Negations
from services.gatekeeper.excerpt import ExcerptMatcher, ExcerptParameters
from services.gatekeeper.rule_ids import RuleId
from tracebound import resources
from tracebound.errors import ConfigError

RuleSeverity = Literal["low_confid", "reject"]
SEVERITY_RANK: dict[str, int] = {"none": 0, "low_confid": 1, "reject": 2}
SEVERITY_BY_RANK: tuple[str, ...] = ("none", "low_confid", "reject")

DEFAULT_RULES_PATH = resources.path("rules", "gatekeeper-rules.json")

P = TypeVar("P", bound=BaseModel)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NoParameters(_Strict):
    """For rules whose behaviour needs no tuning."""


class AnswerVersionParameters(_Strict):
    expected: str = Field(min_length=1)


class ForbiddenFieldsParameters(_Strict):
    fields: tuple[str, ...] = Field(min_length=1)


class ClaimsShapeParameters(_Strict):
    string_fields: tuple[str, ...] = ()


# The model of the parameters of every rule the code implements (every member of
# :class:`RuleId`). A rule id in the file that is no member has no implementation;
# a member not in the file is undeclared. Both are configuration errors.
RULE_PARAMETERS: dict[RuleId, type[BaseModel]] = {
    RuleId.CONTRACT_ANSWER_VERSION: AnswerVersionParameters,
    RuleId.CONTRACT_FORBIDDEN_FIELDS: ForbiddenFieldsParameters,
    RuleId.CONTRACT_CLAIMS_SHAPE: ClaimsShapeParameters,
    RuleId.CLAIM_BINDINGS_NONEMPTY: NoParameters,
    RuleId.BINDING_FIELDS: NoParameters,
    RuleId.CLAIM_DUPLICATE_BINDING: NoParameters,
    RuleId.EVIDENCE_RAW_PATH_SHAPE: NoParameters,
    RuleId.NEGATIVE_NO_EVIDENCE_ONLY: NoParameters,
    RuleId.NEGATIVE_CLAIM_TYPE: NoParameters,
    RuleId.INVOCATION_BACKFILL: NoParameters,
    RuleId.INVOCATION_EXISTS: NoParameters,
    RuleId.INVOCATION_TOOL_NAME: NoParameters,
    RuleId.INVOCATION_LEGACY_REFS: NoParameters,
    RuleId.EVIDENCE_RAW_PATH: NoParameters,
    RuleId.EVIDENCE_EXCERPT_SUPPORTED: ExcerptParameters,
    RuleId.EVIDENCE_UNIQUE_ITEM: NoParameters,
}


class RuleSpec(_Strict):
    """One rule entry of the file."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
    description: str = Field(min_length=1)
    enabled: StrictBool
    default_severity: RuleSeverity
    parameters: dict[str, Any] = Field(default_factory=dict)


class EvidenceContract(_Strict):
    """The raw_path table of the executor contract: which arrays each tool returns (its
    items first: ``logs``, then any other it cites, such as ``shapes``)."""

    no_evidence_path: str = Field(min_length=1)
    tool_arrays: dict[str, str | tuple[str, ...]] = Field(min_length=1)

    def arrays_of(self) -> dict[str, tuple[str, ...]]:
        """Each tool's arrays as a tuple."""
        return {t: (a,) if isinstance(a, str) else a for t, a in self.tool_arrays.items()}

    negative_claim_types: tuple[str, ...] = Field(min_length=1)


class RulesFile(_Strict):
    """The whole rules file."""

    rule_set_version: str = Field(min_length=1)
    evidence_contract: EvidenceContract
    rules: tuple[RuleSpec, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> RulesFile:
        seen: set[str] = set()
        for rule in self.rules:
            if rule.id in seen:
                raise ValueError(f"duplicate rule id {rule.id!r}")
            seen.add(rule.id)
        return self


@dataclass(frozen=True, eq=False)
class Ruleset:
    """A validated rule set, ready for :func:`services.gatekeeper.check.check`.

    Compared and hashed by identity, so checks can cache what they derive from it.
    """

    version: str
    source: str
    rules: tuple[RuleSpec, ...]
    contract: EvidenceContract
    parameters: dict[str, BaseModel]
    matcher: ExcerptMatcher
    enabled_ids: frozenset[str] = field(init=False)
    order: tuple[str, ...] = field(init=False)
    severities: dict[str, str] = field(init=False)
    _metadata: tuple[dict[str, Any], ...] = field(init=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "enabled_ids", frozenset(r.id for r in self.rules if r.enabled))
        set_(self, "order", tuple(r.id for r in self.rules))
        set_(self, "severities", {r.id: r.default_severity for r in self.rules})
        meta = tuple(
            {"id": r.id, "description": r.description, "enabled": True, "default_severity": s}
            for r in self.rules
            if r.enabled
            for s in (r.default_severity,)
        )
        set_(self, "_metadata", meta)

    def params(self, rule_id: str, model: type[P]) -> P:
        """The typed parameters of one rule."""
        value = self.parameters[rule_id]
        if not isinstance(value, model):
            raise TypeError(f"rule {rule_id} parameters are {type(value).__name__}, not {model}")
        return value

    def metadata(self) -> list[dict[str, Any]]:
        """Fresh summary dicts of the enabled rules, as ``gatekeeper_result.rules`` wants."""
        return [dict(rule) for rule in self._metadata]


def _describe(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        location = "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"]
        ).lstrip(".")
        where = f"{location}: " if location else ""
        got = "" if error["type"] == "missing" else f" (got {error.get('input')!r:.60})"
        problems.append(f"{where}{error['msg']}{got}")
    return "; ".join(problems)


def parse_ruleset(
    data: object, source: str = "<rules>", negations: Negations | None = None
) -> Ruleset:
    """Validate an already-decoded rules document; ``source`` names it in errors.

    ``negations`` is the lexicon the excerpt matcher reads (default: the repository's).
    """
    try:
        document = RulesFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid gatekeeper rules: {_describe(exc)}") from None
    declared = {rule.id for rule in document.rules}
    known = {str(rule_id) for rule_id in RuleId}
    unknown = sorted(declared - known)
    if unknown:
        raise ConfigError(f"{source}: rules without an implementation: {', '.join(unknown)}")
    missing = sorted(known - declared)
    if missing:
        raise ConfigError(
            f"{source}: implemented rules not declared (add them, enabled false to turn "
            f"one off): {', '.join(missing)}"
        )
    parameters: dict[str, BaseModel] = {}
    for rule in document.rules:
        try:
            parameters[rule.id] = RULE_PARAMETERS[RuleId(rule.id)].model_validate(rule.parameters)
        except ValidationError as exc:
            raise ConfigError(
                f"{source}: rule {rule.id} has invalid parameters: {_describe(exc)}"
            ) from None
    excerpt = parameters[RuleId.EVIDENCE_EXCERPT_SUPPORTED]
    if not isinstance(excerpt, ExcerptParameters):  # pragma: no cover - RULE_PARAMETERS says so
        raise TypeError("evidence.excerpt_supported parameters are not ExcerptParameters")
    return Ruleset(
        version=document.rule_set_version,
        source=source,
        rules=document.rules,
        contract=document.evidence_contract,
        parameters=parameters,
        matcher=ExcerptMatcher(excerpt, negations),
    )


def load_ruleset(path: str | Path | None = None) -> Ruleset:
    """Read and validate a rules file; the default is the repository's own."""
    rules_path = Path(path) if path is not None else DEFAULT_RULES_PATH
    try:
        text = rules_path.read_text(encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"{rules_path}: cannot read gatekeeper rules file: {reason}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{rules_path}: gatekeeper rules file is not UTF-8") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{rules_path}: gatekeeper rules file is not JSON: {exc.msg} "
            f"(line {exc.lineno}, column {exc.colno})"
        ) from None
    return parse_ruleset(data, str(rules_path))


@cache
def default_ruleset() -> Ruleset:
    """The repository's rule set, loaded once per process."""
    return load_ruleset(DEFAULT_RULES_PATH)
