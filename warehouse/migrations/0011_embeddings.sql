-- Issue 10: chunk embeddings computed once per (embedding model, chunk text),
-- so a haystack shared by many questions, budgets, policies or runs is embedded
-- once (generation/embeddings.py). Key (model, text_sha256), checked by its
-- writer (warehouse/raw_tables.py, rule content): a stored key is kept as is.

create table raw.embeddings (
    model varchar not null,        -- embedding model id: <name>@<digest of its files and recipe>
    text_sha256 varchar not null,  -- sha256 of the chunk text's UTF-8 bytes
    dim integer not null,          -- length of vector
    vector float[] not null,       -- float32, stored exactly as computed
    created_at timestamp not null
);
