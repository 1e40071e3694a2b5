-- Why each model call ended, as the server said (stop, tool_calls, length, ...);
-- null for steps recorded before AgentStep carried it, and when no reply came.

ALTER TABLE agent_step ADD COLUMN finish_reason text;
