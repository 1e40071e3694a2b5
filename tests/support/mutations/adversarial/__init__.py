"""The adversarial groundedness suite (see ``report`` for what it measures)."""
