with

source as (

    select * from {{ source('generation', 'artifacts') }}

),

renamed as (

    select
        ---------- ids
        artifact_hash,

        ---------- strings
        text as artifact_text,
        tokenizer,

        ---------- numerics
        token_count,
        char_count,

        ---------- timestamps
        created_at

    from source

)

select * from renamed
