{#
    One row per audit (audit_id = panel x mode x declared pair), with the
    panel's dataset and verdict from dim_panels when the panel is in the
    marts (a replay-audit of a ragscale folder is not), and whether the
    panel's footprint still has the row count the audit saw.
#}
with

audits as (

    select
        *,
        cast(json_extract(summary_json, '$.panel.rows') as bigint)
            as audited_row_count
    from {{ ref('stg_analysis__audits') }}

),

panels as (

    select
        panel_id,
        dataset_id,
        panel_kind,
        row_count,
        verdict
    from {{ ref('dim_panels') }}

),

audits_joined_to_panels as (

    select
        audits.audit_id,
        audits.panel_id,
        audits.input_fingerprint,
        audits.panel_name,
        panels.dataset_id,
        panels.panel_kind,
        audits.metric,
        audits.audit_mode,
        audits.declared_pair,
        panels.verdict as panel_verdict,
        audits.code_version,
        audits.settings_json,
        audits.seed,
        audits.audited_row_count,
        panels.row_count as panel_row_count,
        audits.is_binary_metric,
        panels.panel_id is not null as is_panel_in_marts,
        audits.audited_at
    from audits
    left join panels
        on audits.panel_id = panels.panel_id

)

select * from audits_joined_to_panels
