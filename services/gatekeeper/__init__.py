"""Gatekeeper: deterministic, model-free verification of the executor's citations.

It sits between the executor and the verifier: every evidence binding must name
a real tool invocation, a raw_path that invocation returned, and an excerpt
found verbatim (after presentation-only normalisation) in that ref's text.
"""

from services.gatekeeper.check import check
from services.gatekeeper.input import parse_invocation
from services.gatekeeper.result import CheckOutcome
from services.gatekeeper.rule_ids import RuleId
from services.gatekeeper.ruleset import Ruleset, default_ruleset, load_ruleset, parse_ruleset

__all__ = [
    "CheckOutcome",
    "RuleId",
    "Ruleset",
    "check",
    "default_ruleset",
    "load_ruleset",
    "parse_invocation",
    "parse_ruleset",
]
