with

source as (

    select * from {{ source('generation', 'artifact_evidence') }}

),

renamed as (

    select
        ---------- ids
        dataset_id,
        item_id,
        policy_id,
        artifact_hash,
        run_id,

        ---------- strings
        provenance as provenance_mode,

        ---------- numerics
        budget_tokens,
        source_tokens,
        selected_tokens,
        compression_ratio,
        gold_spans as gold_span_count,
        spans_kept as kept_span_count,
        span_recall,
        spans_survived as survived_span_count,
        verbatim_survival,
        evidence_recall,

        ---------- booleans
        is_clipped,
        evidence_recall is not null as is_evidence_evaluable,

        ---------- timestamps
        computed_at

    from source

)

select * from renamed
