"""Wiring shared by the role services (mode selection, model construction)."""
