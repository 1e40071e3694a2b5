-- The order the run list and the dashboard page in: newest request first, runs
-- without a projected request last. With this index a page reads only its own
-- rows however many runs the read model holds. The name is PostgreSQL's default
-- for this expression, so `projections rebuild` restores it like the others.

CREATE INDEX diagnosis_run_coalesce_run_id_idx
    ON diagnosis_run ((coalesce(requested_at, 'epoch'::timestamptz)) DESC, run_id DESC);
CREATE INDEX diagnosis_run_mode_idx ON diagnosis_run (mode);
CREATE INDEX diagnosis_run_selected_skill_idx ON diagnosis_run (selected_skill);
