with

source as (

    select * from {{ source('generation', 'artifact_compilations') }}

),

renamed as (

    select
        ---------- ids
        dataset_id,
        item_id,
        policy_id,
        artifact_hash,
        pool_id,
        raw_evidence_hash,
        run_id,
        source_file_sha256,

        ---------- strings
        kept_spans_json,
        producer_model,
        producer_version,
        producer_endpoint,
        metadata_json,

        ---------- numerics
        budget_tokens,
        source_tokens,
        producer_tokens,
        latency_ms,
        cost_usd,

        ---------- timestamps
        created_at

    from source

)

select * from renamed
