-- The backend that answered each tool call (tracebound.ToolBackend: name, url),
-- shown on the trace; null for invocations recorded before backends were.

ALTER TABLE tool_invocation ADD COLUMN backend jsonb;
