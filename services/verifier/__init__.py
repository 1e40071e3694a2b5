"""Verifier: does each claim follow from its gatekeeper-verified evidence?

The deterministic ``rules`` verifier compares every number (units normalised),
identifier and negation of a claim with the excerpts the gatekeeper verified,
decides PASS / LOW_CONFID / REJECT, and hands the composer only the material it
may state. It never calls tools and never reads skills.
"""

from services.verifier.aiops import evaluate_aiops
from services.verifier.facts import Facts, extract
from services.verifier.input import VerifierInput, parse_inputs
from services.verifier.judge import LOW_CONFID, PASS, REJECT, VerifierOutcome, verify

__all__ = [
    "LOW_CONFID",
    "PASS",
    "REJECT",
    "Facts",
    "VerifierInput",
    "VerifierOutcome",
    "evaluate_aiops",
    "extract",
    "parse_inputs",
    "verify",
]
