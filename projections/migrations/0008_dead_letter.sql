-- Dead letters (tracebound.dead-letters): input a role could not process, one row
-- per DeadLetter event, so the dashboard can chart their rate beside the runs.
-- The raw key and value bytes stay on the topic; the row keeps where the input
-- was, who refused it and why. run_id is null when the input's key was not one.

CREATE TABLE dead_letter (
    event_id         text PRIMARY KEY,
    run_id           text,
    occurred_at      timestamptz NOT NULL,
    service          text NOT NULL,
    source_topic     text NOT NULL,
    source_partition integer NOT NULL,
    source_offset    bigint NOT NULL,
    error_type       text NOT NULL,
    error_message    text NOT NULL
);
CREATE INDEX dead_letter_occurred_at_idx ON dead_letter (occurred_at);
