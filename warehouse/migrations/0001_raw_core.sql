-- ragledger raw schema, version 1: the tables loaders write and dbt reads.
-- Stored in a DuckLake, which has no PRIMARY KEY, UNIQUE or CHECK constraints and
-- only literal defaults: each table's key and allowed values are checked by its one
-- writer in warehouse/raw_tables.py before commit, which also stamps the
-- loaded_at / created_at columns.
-- Append-only by convention: every row carries the file hash or run id it came
-- from. Hashes are "sha256:<hex>". Budgets of 0 mean "no budget".

create schema if not exists raw;

---------- files and runs

create table raw.source_files (
    file_sha256 varchar,   -- of the (decompressed) content
    kind varchar not null,             -- matrix, ragscale_dataset, ragscale_scores, ...
    file_name varchar not null,
    path varchar not null,
    byte_size bigint not null,
    row_count bigint not null,
    loaded_at timestamp
);

create table raw.runs (
    run_id varchar,
    kind varchar not null,             -- ingest, compile, replay, audit
    command varchar,
    config_json varchar,
    code_version varchar,
    status varchar not null,           -- running, finished, failed, interrupted
    started_at timestamp,
    finished_at timestamp
);

---------- the released interaction matrix, exactly as published

create table raw.matrix_releases (
    release varchar,
    file_sha256 varchar not null,
    file_name varchar not null,
    row_count bigint not null,
    loaded_at timestamp
);

create table raw.matrix_rows (
    release varchar not null,
    file_sha256 varchar not null,
    line_number bigint not null,       -- first physical line of the record (header = 1)
    dataset varchar not null,
    example_id varchar not null,
    question varchar not null,
    question_type varchar not null,
    reference_answer varchar not null,
    reader_model varchar not null,
    method varchar not null,
    correct integer not null,
    judge_score double,
    generated_answer varchar not null,
    evidence_tokens double,
    reader_raw_accuracy double,
    transition_type varchar not null
    -- key (release, dataset, example_id, reader_model, method): checked by its writer (warehouse/raw_tables.py)
);

---------- benchmark items, candidate pools, evidence spans

create table raw.datasets (
    dataset_id varchar,    -- a frozen slice, e.g. hotpotqa-demo-100
    benchmark varchar not null,        -- hotpotqa, musique, nq, ...
    slice_spec varchar not null,       -- first-N, id list, or 'as-published'
    version varchar not null,
    description varchar,
    source_file_sha256 varchar not null,
    item_count bigint not null,
    loaded_at timestamp
);

create table raw.items (
    dataset_id varchar not null,
    item_id varchar not null,
    question varchar not null,
    reference_answers_json varchar not null,   -- JSON list; aliases included
    question_type varchar,
    metadata_json varchar not null default '{}',
    pool_id varchar,                   -- raw.pools; null when the item has none
    item_hash varchar not null,        -- sha256 of the canonical item JSON
    source_file_sha256 varchar not null,
    source_line bigint,
    loaded_at timestamp
    -- key (dataset_id, item_id): checked by its writer (warehouse/raw_tables.py)
);

-- A pool is an ordered list of passages; pool_id = sha256 of the passage texts
-- joined by a blank line ("\n\n"), the raw evidence text ragscale hashes.
create table raw.pools (
    pool_id varchar,
    passage_count integer not null,
    char_count bigint not null
);

create table raw.pool_passages (
    pool_id varchar not null,
    position integer not null,         -- 0-based, supplied order
    passage_id varchar,
    title varchar,
    text varchar not null
    -- key (pool_id, position): checked by its writer (warehouse/raw_tables.py)
);

-- Gold evidence located in a passage by half-open character offsets.
create table raw.evidence_spans (
    dataset_id varchar not null,
    item_id varchar not null,
    span_index integer not null,
    pool_id varchar not null,
    passage_position integer not null,
    char_start integer not null,
    char_end integer not null,
    span_text varchar not null,
    kind varchar not null,             -- supporting_fact, answer_turn, needle, ...
    occurrence integer not null default 0
    -- key (dataset_id, item_id, span_index): checked by its writer (warehouse/raw_tables.py)
);

---------- evidence policies and stored artifacts

create table raw.policies (
    policy_id varchar,     -- e.g. hotpotqa-distractor-10, llm-summary:qwen/qwen3-14b
    kind varchar not null,
    name varchar not null,
    version integer not null default 1,
    config_json varchar not null,
    config_hash varchar not null,
    description varchar,
    created_at timestamp
);

-- Content-addressed evidence text. text is null when only the hash is known.
create table raw.artifacts (
    artifact_hash varchar,
    text varchar,
    token_count integer,
    tokenizer varchar,
    char_count bigint,
    created_at timestamp
);

-- One stored artifact per (item, policy, budget): the experimental control.
create table raw.artifact_compilations (
    dataset_id varchar not null,
    item_id varchar not null,
    policy_id varchar not null,
    budget_tokens integer not null default 0,
    artifact_hash varchar not null,
    pool_id varchar,
    raw_evidence_hash varchar,
    source_tokens integer,
    kept_spans_json varchar,           -- JSON list of [passage, start, end] or token spans
    producer_model varchar,
    producer_version varchar,
    producer_endpoint varchar,
    producer_tokens integer,
    latency_ms double,
    cost_usd double,
    metadata_json varchar not null default '{}',
    run_id varchar,
    source_file_sha256 varchar,
    created_at timestamp
    -- key (dataset_id, item_id, policy_id, budget_tokens): checked by its writer (warehouse/raw_tables.py)
);

---------- readers, generations, scores

-- Default and user family maps; a user row overrides a default row.
create table raw.reader_families (
    reader_model varchar not null,
    family varchar not null,
    source varchar not null,
    source_file_sha256 varchar,
    loaded_at timestamp
    -- key (reader_model, source): checked by its writer (warehouse/raw_tables.py)
);

create table raw.readers (
    reader_id varchar,
    model varchar not null,
    family varchar,                    -- as declared by the source; null if none
    backend varchar not null,          -- litellm, local, ragscale-import, ...
    api_base varchar,
    parameters_json varchar not null default '{}',
    prompt_template_hash varchar,
    config_hash varchar not null,
    source varchar not null,
    created_at timestamp
);

-- One row per reader call (or imported answer). generation_id = sha256 of the
-- call key (reader, dataset, item, evidence hash, prompt hash, params, seed).
create table raw.generations (
    generation_id varchar,
    run_id varchar,
    dataset_id varchar not null,
    item_id varchar not null,
    reader_id varchar not null,
    policy_id varchar not null,
    budget_tokens integer not null default 0,
    evidence_hash varchar,
    prompt_hash varchar,
    params_hash varchar,
    seed integer not null default 0,
    answer varchar,
    prompt_tokens integer,
    completion_tokens integer,
    total_tokens integer,
    latency_ms double,
    cost_usd double,
    provider varchar,
    response_id varchar,
    finish_reason varchar,
    status varchar not null,
    error varchar,
    attempts integer not null default 1,
    metadata_json varchar not null default '{}',
    source_file_sha256 varchar,
    created_at timestamp
);

create table raw.scores (
    generation_id varchar not null,
    metric varchar not null,
    score double,
    status varchar not null default 'ok',
    scorer_version varchar not null,
    detail_json varchar not null default '{}',
    source_file_sha256 varchar,
    created_at timestamp
    -- key (generation_id, metric): checked by its writer (warehouse/raw_tables.py)
);
