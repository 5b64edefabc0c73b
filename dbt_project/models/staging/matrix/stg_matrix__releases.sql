with

source as (

    select * from {{ source('matrix', 'matrix_releases') }}

),

renamed as (

    select
        ---------- ids
        release as matrix_release,
        file_sha256 as source_file_sha256,

        ---------- strings
        file_name as source_file_name,

        ---------- numerics
        row_count as release_row_count,

        ---------- timestamps
        loaded_at

    from source

)

select * from renamed
