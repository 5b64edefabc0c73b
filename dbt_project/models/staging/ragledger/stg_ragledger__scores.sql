{#
    Scores ragledger computed itself (replayed answers, judges), also on
    imported answers: no source file.
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
    where source_file_sha256 is null

)

select * from renamed
