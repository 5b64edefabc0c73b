{{ config(severity='warn') }}
{#
    A panel compares readers on one metric; if its cells were scored by
    different scorers (e.g. ragscale's token F1 for imported readers and the
    project's HotpotQA-normalised F1 for replayed ones), the comparison mixes
    scoring rules. Returns one row per panel with more than one scorer version,
    naming the command that puts the panel's answers on one scorer.
#}
with

panel_cells as (

    select
        panel_id,
        dataset_id,
        metric,
        raw_scorer_version,
        compressed_scorer_version
    from {{ ref('int_panel_cells') }}

),

cell_scorers as (

    select
        panel_id,
        dataset_id,
        metric,
        unnest([raw_scorer_version, compressed_scorer_version]) as scorer_version
    from panel_cells

),

validation_errors as (

    select
        panel_id,
        dataset_id,
        metric,
        count(distinct scorer_version) as scorer_versions,
        string_agg(distinct scorer_version, ', ' order by scorer_version)
            as scorers
    from cell_scorers
    group by panel_id, dataset_id, metric
    having count(distinct scorer_version) > 1

),

described as (

    select
        *,
        'panel ' || panel_id || ': cells scored by ' || scorer_versions
        || ' scorer versions (' || scorers || '); put them on one with '
        || 'ragledger rescore --dataset ' || dataset_id || ' --metric '
        || metric || ' [--scorer NAME@VERSION], then build again' as problem
    from validation_errors

)

select * from described
