-- Eval and replay reports (replay/store.py). A report is one row; an eval
-- suite's cases are one row each, so a dashboard can list failing cases over time.

CREATE TABLE eval_report (
    id          bigserial PRIMARY KEY,
    kind        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    baseline    jsonb NOT NULL DEFAULT '{}'::jsonb,
    candidate   jsonb NOT NULL DEFAULT '{}'::jsonb,
    summary     jsonb NOT NULL DEFAULT '{}'::jsonb,
    per_run     jsonb NOT NULL DEFAULT '[]'::jsonb
);
CREATE INDEX eval_report_kind_created_at_idx ON eval_report (kind, created_at);

CREATE TABLE eval_case_result (
    report_id   bigint NOT NULL REFERENCES eval_report (id) ON DELETE CASCADE,
    case_id     text NOT NULL,
    passed      boolean NOT NULL,
    reasons     jsonb NOT NULL DEFAULT '[]'::jsonb,
    run         jsonb NOT NULL DEFAULT '{}'::jsonb,
    PRIMARY KEY (report_id, case_id)
);
CREATE INDEX eval_case_result_case_id_idx ON eval_case_result (case_id);
