with

source as (

    select * from {{ source('analysis', 'statistics') }}

),

renamed as (

    select
        ---------- ids
        audit_id,
        panel_id,
        input_fingerprint,

        ---------- strings
        metric,
        statistic,
        reason as null_reason,
        counts_json,
        code_version,

        ---------- numerics
        estimate,
        interval_low,
        interval_high,
        seed,
        draws as draw_count

    from source

)

select * from renamed
