"""The gatekeeper's rule ids: every rule the code implements, named once.

Each guard in :mod:`services.gatekeeper.run` names its rule by a member here, never
by a string, and the rules file (``rules/gatekeeper-rules.json``) is held to this
enumeration when it is loaded (:func:`services.gatekeeper.ruleset.parse_ruleset`):
an id in the file that the code does not know, or a member the file does not
declare, is a :class:`~tracebound.errors.ConfigError` naming it.
"""

from __future__ import annotations

from enum import StrEnum


class RuleId(StrEnum):
    """One gatekeeper rule; the value is its id in the rules file and in results."""

    CONTRACT_ANSWER_VERSION = "contract.answer_version"
    CONTRACT_FORBIDDEN_FIELDS = "contract.forbidden_fields"
    CONTRACT_CLAIMS_SHAPE = "contract.claims_shape"
    CLAIM_BINDINGS_NONEMPTY = "claim.bindings_nonempty"
    BINDING_FIELDS = "binding.fields"
    CLAIM_DUPLICATE_BINDING = "claim.duplicate_binding"
    EVIDENCE_RAW_PATH_SHAPE = "evidence.raw_path_shape"
    NEGATIVE_NO_EVIDENCE_ONLY = "negative.no_evidence_only"
    NEGATIVE_CLAIM_TYPE = "negative.claim_type"
    INVOCATION_BACKFILL = "invocation.backfill"
    INVOCATION_EXISTS = "invocation.exists"
    INVOCATION_TOOL_NAME = "invocation.tool_name"
    INVOCATION_LEGACY_REFS = "invocation.legacy_refs"
    EVIDENCE_RAW_PATH = "evidence.raw_path"
    EVIDENCE_EXCERPT_SUPPORTED = "evidence.excerpt_supported"
    EVIDENCE_UNIQUE_ITEM = "evidence.unique_item"


__all__ = ["RuleId"]
