-- The warehouse as a DuckLake: runs say who ran them and what they wrote, so a
-- run whose process died can be marked interrupted; audits record the snapshot
-- of the lake they read, so `ragledger audit --at` reproduces them.

alter table raw.runs add column host varchar;
alter table raw.runs add column pid integer;
alter table raw.runs add column counts_json varchar;

alter table analysis.audits add column snapshot_id bigint;
