"""Replay and re-evaluation: re-run recorded work with candidate rules, prompts or models.

Recorded events are read from the topics (they keep their history forever) with
an assign-only consumer, the pure role handlers are re-run in this process, and
old and new outcomes are compared per run and in total. Nothing is published
and no read model is written: the only thing a replay stores is its own report,
in the eval tables (``projections/migrations/0002_eval.sql``), unless told not to.
Eval suites (``evals/``) run through the same in-process chain.
"""
