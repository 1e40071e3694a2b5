"""Evaluation data: demo cases (demo/) and the held-out groundedness corpus (groundedness/)."""
