"""The HTTP API of tracebound: webhook, chat, event streams, runs, traces and pages.

It is the pipeline's front door. Every accepted request becomes one
``DiagnosisRequested`` event on ``tracebound.requests``, and the HTTP reply is
sent only after the broker acknowledged it, so a 2xx always means "the run
exists" and a 5xx always means "try again". The read side (run list, traces)
comes from the read models of :mod:`projections`. Auth and errors are the same
for every route (:mod:`web.http`).
"""
