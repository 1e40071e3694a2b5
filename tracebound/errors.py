"""One error hierarchy for the whole project.

Callers branch on the class, never on message text: the runtime dead-letters
``PoisonInput`` subclasses, retries ``TransientError`` subclasses, and reads an
input again once when its handler raised anything else; an input that makes the
handler raise twice is dead-lettered as ``HandlerCrashed``.
"""


class TraceboundError(Exception):
    """Base of every error tracebound raises on purpose."""


class ConfigError(TraceboundError):
    """A setting, rule file, prompt or schema file is missing or invalid."""


class StackError(TraceboundError):
    """The local Kafka/PostgreSQL stack cannot be started, checked or stopped."""


class PoisonInput(TraceboundError):
    """Input that can never be processed; it belongs in the dead-letter topic."""


class DecodeError(PoisonInput):
    """Bytes that are not a valid Avro record of a known schema."""


class UnknownSchemaError(DecodeError):
    """The fingerprint or schema id in the header names no schema we know."""


class EventValidationError(PoisonInput):
    """Decoded Avro that does not satisfy the event model."""


class OutputTooLarge(PoisonInput):
    """Handling the input made a record over the producer's message size limit."""


class HandlerCrashed(PoisonInput):
    """The role's handler raised on the same input twice: a bug the input triggers."""


class TransientError(TraceboundError):
    """A dependency (broker, database, model endpoint) failed; retry with backoff."""


class RecordTooLarge(TraceboundError):
    """Kafka refused a record for its size: sending it again can never succeed."""


class InvalidInputError(TraceboundError):
    """User-supplied input (a CLI file, an HTTP body) is unreadable or invalid."""
