-- Issue 10 (rescore): every scorer version a stored answer was scored under.
-- raw.scores keeps the one score in force per generation_id x metric (what dbt,
-- judges and reruns read); `ragledger rescore` puts a generation on another
-- scorer by replacing that row, and keeps both the old and the new score here,
-- one row per generation_id x metric x scorer_version. No keys (the warehouse
-- is becoming a DuckLake): the writer inserts only versions not yet present.

create table raw.score_versions (
    generation_id varchar not null,
    metric varchar not null,
    scorer_version varchar not null,
    score double,
    status varchar not null,
    detail_json varchar not null default '{}',
    source_file_sha256 varchar,
    run_id varchar,                    -- the rescore run that recorded it
    created_at timestamp               -- set by the writer (no default: DuckLake)
);
