{#
    One row per audit x reader. The source's rescue and damage columns change
    unit with the metric (a share on binary panels, a mean change in
    percentage points on continuous ones); they keep a neutral name here and
    fct_audit_readers splits them into *_share and *_pp columns.
#}
with

source as (

    select * from {{ source('analysis', 'reader_results') }}

),

renamed as (

    select
        ---------- ids
        audit_id,
        panel_id,
        reader_id,

        ---------- strings
        reader_family,
        code_version,

        ---------- numerics
        raw_mean,
        compressed_mean,
        gain,
        rescue as rescue_value,
        damage as damage_value,
        cells as cell_count

    from source

)

select * from renamed
