"""The ingest service: Alertmanager webhook, chat API and the ``serve``/``publish``/``demo`` CLI.

It is the pipeline's front door. Every accepted request becomes one
``DiagnosisRequested`` event on ``tracebound.requests``, and the HTTP reply is
sent only after the broker acknowledged it, so a 2xx always means "the run
exists" and a 5xx always means "try again".
"""
