{#
    Every reader call: ragledger's own replays (no source_file_sha256) and
    the answers imported from ragscale runs (`ragledger ingest ragscale`,
    source_file_sha256 names the paired_scores.csv / records.jsonl).
#}
with

source as (

    select * from {{ source('ragledger', 'generations') }}

),

renamed as (

    select
        ---------- ids
        generation_id,
        run_id,
        dataset_id,
        item_id,
        reader_id,
        policy_id,
        evidence_hash,
        prompt_hash,
        params_hash,
        response_id,
        source_file_sha256,

        ---------- strings
        answer,
        provider,
        finish_reason,
        status as generation_status,
        error as error_message,
        metadata_json,

        ---------- numerics
        budget_tokens,
        seed,
        prompt_tokens,
        completion_tokens,
        total_tokens,
        latency_ms,
        cost_usd,
        attempts,

        ---------- timestamps
        created_at

    from source

)

select * from renamed
