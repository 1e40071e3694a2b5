"""The held-out groundedness corpus of the verifier: generator, data and manifest."""
