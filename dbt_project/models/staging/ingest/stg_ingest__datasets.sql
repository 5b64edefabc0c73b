with

source as (

    select * from {{ source('ingest', 'datasets') }}

),

renamed as (

    select
        ---------- ids
        dataset_id,
        source_file_sha256,

        ---------- strings
        benchmark,
        slice_spec,
        version as dataset_version,
        description as dataset_description,

        ---------- numerics
        item_count,

        ---------- timestamps
        loaded_at

    from source

)

select * from renamed
