"""Executor: runs evidence tools for a plan and reports micro-facts with their citations."""
