-- The large columns of the read models compressed with lz4 instead of pglz: a
-- run's row holds kilobytes of JSON rewritten on every batch it is in, and lz4
-- compresses and decompresses it several times faster for about the same size.
-- Rows already stored keep their pglz values until they are next written (a
-- `projections rebuild` rewrites all of them); both are read alike.

ALTER TABLE diagnosis_run
    ALTER COLUMN plan SET COMPRESSION lz4,
    ALTER COLUMN request SET COMPRESSION lz4,
    ALTER COLUMN final_answer SET COMPRESSION lz4,
    ALTER COLUMN timings SET COMPRESSION lz4,
    ALTER COLUMN self_evaluation SET COMPRESSION lz4,
    ALTER COLUMN resolved_alerts SET COMPRESSION lz4,
    ALTER COLUMN merge_state SET COMPRESSION lz4;

ALTER TABLE tool_invocation
    ALTER COLUMN input_params SET COMPRESSION lz4,
    ALTER COLUMN output SET COMPRESSION lz4,
    ALTER COLUMN retrieval_details SET COMPRESSION lz4,
    ALTER COLUMN backend SET COMPRESSION lz4;

ALTER TABLE agent_step
    ALTER COLUMN model_input SET COMPRESSION lz4,
    ALTER COLUMN model_output SET COMPRESSION lz4,
    ALTER COLUMN thought SET COMPRESSION lz4;
