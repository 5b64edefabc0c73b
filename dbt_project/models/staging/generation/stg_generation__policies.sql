with

source as (

    select * from {{ source('generation', 'policies') }}

),

renamed as (

    select
        ---------- ids
        policy_id,
        config_hash,

        ---------- strings
        kind as policy_kind,
        name as policy_name,
        config_json,
        description as policy_description,

        ---------- numerics
        version as policy_version,

        ---------- timestamps
        created_at

    from source

)

select * from renamed
