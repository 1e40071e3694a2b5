"""The repository's rule files, loaded once, for tests that call the pure judges.

The judges take their rules as arguments (nothing falls back to a global
default), so tests name the files they judge by: these, or their own edits.
"""

from __future__ import annotations

from services.composer.rulebook import ComposerRules
from services.verifier.rules_file import default_overclaim_phrases, default_verifier_rules

RULES = default_verifier_rules()
PHRASES = default_overclaim_phrases()
BOOK = ComposerRules.shipped()
