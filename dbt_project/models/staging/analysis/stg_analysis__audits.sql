{#
    One row per audit (audit_id): what `ragledger audit` / `replay-audit`
    computed for one panel in one mode. is_binary_metric is read from the
    audit's own summary (panel-mode audits), so it holds for panels that
    never reached the marts (replay-audit of a ragscale folder).
#}
with

source as (

    select * from {{ source('analysis', 'audits') }}

),

renamed as (

    select
        ---------- ids
        audit_id,
        panel_id,
        input_fingerprint,

        ---------- strings
        panel_name,
        metric,
        mode as audit_mode,
        declared_pair,
        code_version,
        settings_json,
        summary_json,

        ---------- numerics
        seed,

        ---------- booleans
        cast(
            json_extract(summary_json, '$.panel.is_binary') as boolean
        ) as is_binary_metric,

        ---------- timestamps
        created_at as audited_at

    from source

)

select * from renamed
