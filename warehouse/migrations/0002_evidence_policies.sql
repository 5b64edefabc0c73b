-- Issue 4 (evidence policies): per-artifact evidence metrics.
-- One row per compilation (dataset x item x policy x budget), written with it.
-- Recall is occurrence-aware where the policy kept source spans and verbatim
-- survival where it rewrote text; both are null when the item has no gold spans.

create table raw.artifact_evidence (
    dataset_id varchar not null,
    item_id varchar not null,
    policy_id varchar not null,
    budget_tokens integer not null default 0,
    artifact_hash varchar not null,
    provenance varchar not null,
    source_tokens integer not null,
    selected_tokens integer not null,
    compression_ratio double,              -- selected / source tokens; 0 for an empty source
    is_clipped boolean not null default 'false',
    gold_spans integer not null default 0, -- raw.evidence_spans rows of the item
    spans_kept integer,                    -- gold spans inside one kept span (null: verbatim)
    span_recall double,                    -- spans_kept / gold_spans
    spans_survived integer,                -- gold span texts found verbatim in the text
    verbatim_survival double,              -- spans_survived / gold_spans
    evidence_recall double,                -- span_recall where spans are kept, else survival
    run_id varchar,
    computed_at timestamp
    -- key (dataset_id, item_id, policy_id, budget_tokens): checked by its writer (warehouse/raw_tables.py)
);
