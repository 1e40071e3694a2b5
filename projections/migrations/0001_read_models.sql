-- The three read models of the pipeline and the projections' own checkpoints.
-- Index names follow PostgreSQL's default pattern <table>_<column>_idx so that
-- `projections rebuild` can restore them after swapping a rebuilt table in.

CREATE TABLE diagnosis_run (
    run_id            text PRIMARY KEY,
    session_id        text,
    mode              text,
    query             text,
    language          text,
    requested_by      text,
    requested_at      timestamptz,
    status            text NOT NULL,
    round             integer NOT NULL DEFAULT 0,
    selected_skill    text,
    narrow_scope      boolean,
    plan              jsonb,
    request           jsonb,
    final_answer      jsonb,
    verdict           text,
    final_status      text,
    timings           jsonb NOT NULL DEFAULT '{}'::jsonb,
    latency_ms        bigint,
    token_count       bigint,
    prompt_tokens     bigint,
    completion_tokens bigint,
    self_evaluation   jsonb,
    merge_state       jsonb NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    last_event_id     text
);
CREATE INDEX diagnosis_run_status_idx ON diagnosis_run (status);
CREATE INDEX diagnosis_run_verdict_idx ON diagnosis_run (verdict);
CREATE INDEX diagnosis_run_requested_at_idx ON diagnosis_run (requested_at);
CREATE INDEX diagnosis_run_session_id_idx ON diagnosis_run (session_id);

CREATE TABLE tool_invocation (
    id                bigint PRIMARY KEY,
    run_id            text NOT NULL,
    round             integer NOT NULL,
    tool_name         text NOT NULL,
    input_params      jsonb,
    output            jsonb,
    output_preview    text NOT NULL DEFAULT '',
    retrieval_layer   text,
    l0_match_count    integer,
    l1_match_count    integer,
    retrieval_details jsonb,
    relevance_level   text,
    dedup_reason      text,
    duration_ms       bigint NOT NULL,
    success           boolean NOT NULL,
    error_message     text,
    created_at        timestamptz NOT NULL,
    event_id          text NOT NULL
);
CREATE INDEX tool_invocation_run_id_idx ON tool_invocation (run_id);

CREATE TABLE agent_step (
    event_id          text PRIMARY KEY,
    run_id            text NOT NULL,
    session_id        text,
    agent_name        text NOT NULL,
    step_index        integer NOT NULL,
    model_input       text NOT NULL,
    model_output      text NOT NULL,
    thought           text,
    has_tool_call     boolean NOT NULL,
    duration_ms       bigint NOT NULL,
    token_count       integer,
    prompt_tokens     integer,
    completion_tokens integer,
    model             text,
    prompt_version    text,
    success           boolean NOT NULL,
    error_message     text,
    created_at        timestamptz NOT NULL
);
CREATE INDEX agent_step_run_id_idx ON agent_step (run_id);

CREATE TABLE projection_checkpoint (
    projection  text NOT NULL,
    topic       text NOT NULL,
    partition   integer NOT NULL,
    next_offset bigint NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (projection, topic, partition)
);
