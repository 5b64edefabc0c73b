-- Issue 5 (reader replay): every attempt of every reader or judge call.
-- raw.generations keeps one row per call key (its latest outcome); this table
-- keeps each attempt behind it, across runs, so retries, 429s, empty replies and
-- errors stay visible after a later run succeeds. Append-only.

create table raw.generation_attempts (
    call_id varchar not null,          -- generation_id, or the judge call id
    call_kind varchar not null,
    attempt integer not null,          -- 1-based, counted across runs
    run_id varchar,
    generation_id varchar not null,    -- the generation answered or judged
    status varchar not null,
    error varchar,
    http_status integer,
    latency_ms double,
    prompt_tokens integer,
    completion_tokens integer,
    cost_usd double,
    response_id varchar,
    finish_reason varchar,
    started_at timestamp not null
    -- key (call_id, attempt): checked by its writer (warehouse/raw_tables.py)
);

-- One row per judge call key: the judge's raw reply and its parsed verdict. The
-- score itself lands in raw.scores (metric judge_match, or the configured name).
create table raw.judge_verdicts (
    judge_call_id varchar, -- sha256 of {judge, generation, prompt, params}
    generation_id varchar not null,
    metric varchar not null,
    judge_id varchar not null,
    judge_model varchar not null,
    prompt_hash varchar not null,
    params_hash varchar not null,
    reply varchar,
    verdict double,                    -- 1, 0, or null when unparseable / failed
    status varchar not null,
    error varchar,
    attempts integer not null default 1,
    run_id varchar,
    created_at timestamp
);
