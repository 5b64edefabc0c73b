{#
    One row per audit_id x reader_id (panel-mode audits): the reader's means
    and gain as audited, and its transitions in the unit of the panel's
    metric: rescue_share / damage_share on binary panels,
    mean_positive_change_pp / mean_negative_change_pp (percentage points)
    on continuous ones; the other pair is null.
#}
with

reader_results as (

    select * from {{ ref('stg_analysis__reader_results') }}

),

audits as (

    select
        audit_id,
        panel_name,
        dataset_id,
        metric,
        is_binary_metric
    from {{ ref('dim_audits') }}

),

results_in_metric_units as (

    select
        reader_results.audit_id,
        reader_results.panel_id,
        reader_results.reader_id,
        audits.panel_name,
        audits.dataset_id,
        audits.metric,
        reader_results.reader_family,
        reader_results.code_version,
        reader_results.cell_count,
        reader_results.raw_mean,
        reader_results.compressed_mean,
        reader_results.gain,
        case
            when audits.is_binary_metric then reader_results.rescue_value
        end as rescue_share,
        case
            when audits.is_binary_metric then reader_results.damage_value
        end as damage_share,
        case
            when not audits.is_binary_metric then reader_results.rescue_value
        end as mean_positive_change_pp,
        case
            when not audits.is_binary_metric then reader_results.damage_value
        end as mean_negative_change_pp,
        audits.is_binary_metric
    from reader_results
    inner join audits
        on reader_results.audit_id = audits.audit_id

)

select * from results_in_metric_units
