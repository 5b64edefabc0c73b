{#
    Every score in force: those ragledger computed itself (replayed answers,
    judges, rescores, also of imported answers: no source file) and those
    imported with ragscale runs (source_file_sha256 set).
#}
with

source as (

    select * from {{ source('ragledger', 'scores') }}

),

renamed as (

    select
        ---------- ids
        generation_id,
        source_file_sha256,

        ---------- strings
        metric,
        status as score_status,
        scorer_version,
        detail_json,

        ---------- numerics
        score,

        ---------- timestamps
        created_at

    from source

)

select * from renamed
