"""The question as a role's prompt shows it: an alert run's question without the summaries.

An alert run's question names each alert with its summary in parentheses
(``HighCPUUsage on payment-service (CPU usage of payment-service is 92%, …)``,
see ``services.ingest.alertmanager``). Every role already has those words where
it needs them: the planner in the input alerts, the executor in the alert
evidence of ``query_metrics``, the verifier in the claims, and the composer's
answer opens with the alerts quoted by code. So a prompt shows the question with
each alert by name and service only, and the three-alert question costs a third
of its tokens. The request event keeps the whole question; a question that does
not quote a summary (a chat question, an operator's own words) is shown as is.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracebound.events import Alert


def shown_question(query: str, alerts: Sequence[Alert]) -> str:
    """``query`` without each alert's `` (summary)``, where it quotes one word for word."""
    for alert in alerts:
        note = alert.annotations.get("summary") or alert.annotations.get("description") or ""
        if note.strip():
            query = query.replace(f" ({note.strip()})", "", 1)
    return query


__all__ = ["shown_question"]
