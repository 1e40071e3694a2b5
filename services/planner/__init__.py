"""Planner: picks a skill and writes ``planner_plan`` (contract section 1)."""
