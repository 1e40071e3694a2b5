"""tracebound: evidence-gated diagnosis of alerts and questions, event-sourced on Kafka."""

__version__ = "0.1.0"
