"""The ingest core: Alertmanager parsing, dedup, publishing, the run buffer, the CLI.

Its HTTP API (webhook, chat, event streams, runs and traces) is :mod:`web`,
which ``python -m services.ingest`` and ``tracebound serve`` start.
"""
