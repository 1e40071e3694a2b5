"""Sentinel: every request ends in exactly one answer, also when a stage stops moving."""
