{#
    One row per audit_id x statistic: the estimate, its interval and, when
    the estimate is null, the reason; with the audit's panel and mode.
#}
with

statistics as (

    select * from {{ ref('stg_analysis__statistics') }}

),

audits as (

    select
        audit_id,
        panel_name,
        dataset_id,
        audit_mode
    from {{ ref('dim_audits') }}

),

statistics_joined_to_audits as (

    select
        statistics.audit_id,
        statistics.panel_id,
        statistics.input_fingerprint,
        audits.panel_name,
        audits.dataset_id,
        audits.audit_mode,
        statistics.metric,
        statistics.statistic,
        statistics.null_reason,
        statistics.counts_json,
        statistics.code_version,
        statistics.estimate,
        statistics.interval_low,
        statistics.interval_high,
        statistics.seed,
        statistics.draw_count,
        statistics.estimate is not null as has_estimate
    from statistics
    inner join audits
        on statistics.audit_id = audits.audit_id

)

select * from statistics_joined_to_audits
