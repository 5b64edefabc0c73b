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
        item_id,
        reader_id,
        metric,
        seed,
        budget_tokens,
        raw_policy_id,
        compressed_policy_id
    from {{ ref('int_panel_cells') }}

),

outcomes as (

    select
        dataset_id,
        item_id,
        reader_id,
        policy_id,
        budget_tokens,
        metric,
        seed,
        scorer_version
    from {{ ref('int_outcomes_unioned') }}

),

cell_scorers as (

    select
        panel_cells.panel_id,
        panel_cells.dataset_id,
        panel_cells.metric,
        panel_cells.reader_id,
        outcomes.scorer_version
    from panel_cells
    inner join outcomes
        on
            panel_cells.dataset_id = outcomes.dataset_id
            and panel_cells.item_id = outcomes.item_id
            and panel_cells.reader_id = outcomes.reader_id
            and panel_cells.metric = outcomes.metric
            and panel_cells.seed = outcomes.seed
            and (
                (
                    panel_cells.raw_policy_id = outcomes.policy_id
                    and outcomes.budget_tokens = 0
                )
                or (
                    panel_cells.compressed_policy_id = outcomes.policy_id
                    and panel_cells.budget_tokens = outcomes.budget_tokens
                )
            )

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
