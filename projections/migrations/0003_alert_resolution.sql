-- Resolved alerts recorded on the run they resolve (from AlertsResolved events):
-- when the last of them ended, and each one with its labels, startsAt and endsAt.
ALTER TABLE diagnosis_run ADD COLUMN resolved_at timestamptz;
ALTER TABLE diagnosis_run ADD COLUMN resolved_alerts jsonb;
