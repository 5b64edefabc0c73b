{# One row per declared panel (`ragledger panels define NAME ...`). #}
with

source as (

    select * from {{ source('ragledger', 'panel_definitions') }}

),

renamed as (

    select
        ---------- ids
        dataset_id,
        from_json(reader_ids_json, '["varchar"]') as reader_ids,
        from_json(item_ids_json, '["varchar"]') as item_ids,

        ---------- strings
        panel_definition_name,

        ---------- timestamps
        created_at

    from source

)

select * from renamed
