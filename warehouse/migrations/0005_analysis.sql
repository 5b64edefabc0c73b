-- ragledger analysis schema: what `ragledger audit` writes from the marts.
-- Python (analysis/) owns these tables; dbt never writes them. One audit of a
-- panel (mode panel, declared-pair or selection) replaces its earlier rows.

create schema if not exists analysis;

create table analysis.audits (
    audit_id varchar,       -- stable per panel x mode x declared pair
    panel_id varchar not null,
    panel_name varchar,
    metric varchar,
    mode varchar not null,              -- panel, declared-pair, selection
    declared_pair varchar,              -- "current -> candidate" in declared-pair mode
    input_fingerprint varchar not null, -- sha256 of the panel's labels and score bytes
    code_version varchar not null,
    seed bigint,
    settings_json varchar not null,     -- counts, seeds, thresholds
    summary_json varchar not null,      -- the full result (strict JSON, no NaN)
    created_at timestamp not null
);

-- One row per panel x metric x statistic (per audit).
create table analysis.statistics (
    audit_id varchar not null,
    panel_id varchar not null,
    metric varchar,
    statistic varchar not null,
    estimate double,                    -- null when undefined; reason says why
    interval_low double,
    interval_high double,
    reason varchar,
    counts_json varchar not null,       -- draws used, splits omitted, boundary hits, ...
    seed bigint,
    draws bigint,
    input_fingerprint varchar not null,
    code_version varchar not null
    -- key (audit_id, statistic): checked by its writer (warehouse/raw_tables.py)
);

-- One row per panel x reader: means, gain and transitions.
create table analysis.reader_results (
    audit_id varchar not null,
    panel_id varchar not null,
    reader_id varchar not null,
    reader_family varchar,
    raw_mean double,
    compressed_mean double,
    gain double,
    rescue double,                      -- share (binary) or mean positive change in pp (continuous)
    damage double,                      -- share of raw-correct (binary) or mean negative change in pp
    cells bigint,
    code_version varchar not null
    -- key (audit_id, reader_id): checked by its writer (warehouse/raw_tables.py)
);
