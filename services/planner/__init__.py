"""Planner: picks a skill and writes ``planner_plan`` (the planner contract, docs/contracts.md)."""
