with

source as (

    select * from {{ source('ingest', 'reader_families') }}

),

renamed as (

    select
        ---------- ids
        reader_model,
        source_file_sha256,

        ---------- strings
        family as reader_family,
        source as family_source,

        ---------- timestamps
        loaded_at

    from source

)

select * from renamed
