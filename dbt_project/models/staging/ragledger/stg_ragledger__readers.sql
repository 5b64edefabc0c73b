{#
    Every reader: those configured for ragledger's own replays and those of
    imported ragscale runs (backend 'ragscale-import').
#}
with

source as (

    select * from {{ source('ragledger', 'readers') }}

),

renamed as (

    select
        ---------- ids
        reader_id,
        config_hash,
        prompt_template_hash,

        ---------- strings
        model as reader_model,
        family as declared_family,
        backend,
        api_base,
        parameters_json,
        source as reader_source,

        ---------- timestamps
        created_at

    from source

)

select * from renamed
