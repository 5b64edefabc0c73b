with

source as (

    select * from {{ source('generation', 'scores') }}

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
