with

source as (

    select * from {{ source('ingest', 'items') }}

),

renamed as (

    select
        ---------- ids
        dataset_id,
        item_id,
        pool_id,
        item_hash,
        source_file_sha256,

        ---------- strings
        question,
        reference_answers_json,
        nullif(question_type, '') as question_type,
        metadata_json as item_metadata_json,

        ---------- numerics
        source_line,

        ---------- timestamps
        loaded_at

    from source

)

select * from renamed
