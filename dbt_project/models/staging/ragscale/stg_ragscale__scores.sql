{# Scores imported with ragscale runs (source_file_sha256 set). #}
with

source as (

    select * from {{ source('ragscale', 'scores') }}

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
    where source_file_sha256 is not null

)

select * from renamed
