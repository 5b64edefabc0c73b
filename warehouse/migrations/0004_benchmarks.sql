-- Benchmark loaders (issue 6): item flags, the loader version of a dataset, and
-- the pool each raw policy gives the reader for an item. Additive only.

alter table raw.items add column is_abstention boolean default 'false';
alter table raw.items add column gold_normalises_empty boolean default 'false';
alter table raw.items add column question_date varchar;

alter table raw.datasets add column loader_version varchar;

-- The pool a raw policy gives the reader for one item: the whole item pool
-- (e.g. hotpotqa-distractor-10), a prefix (musique-first8) or a BM25 top-k
-- (longmemeval-bm25-top20, triviaqa-bm25-top20). sources_json lists, per passage
-- of pool_id, where it came from in source_pool_id: {"position": p} and, for a
-- chunk, char_start/char_end in that passage and prefix_chars of a title prefix.
create table raw.policy_pools (
    dataset_id varchar not null,
    item_id varchar not null,
    policy_id varchar not null,
    pool_id varchar not null,
    source_pool_id varchar not null,
    sources_json varchar not null,
    loaded_at timestamp
    -- key (dataset_id, item_id, policy_id): checked by its writer (warehouse/raw_tables.py)
);
