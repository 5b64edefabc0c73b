{{ config(
    materialized='incremental',
    incremental_strategy='dataset_partitions',
    partition_key='dataset_id',
    on_schema_change='fail'
) }}
{#
    The exact footprint of every panel, one row per panel_id x reader_id x
    item_id: the panel's member readers (int_panel_memberships) crossed with
    its rows (int_panels_defined). Nothing is imputed: a member covers every
    row by definition.

    A table, not a view like the rest of the folder: the artifact-identity
    and scorer tests, dim_panels and fct_panel_cells all read it, so the
    footprint is joined once per build. Incremental by dataset
    (macros/dataset_partitions.sql). The answers stay in the pairs
    (fct_paired_outcomes): no cell reader needs them.
#}
with

paired_outcomes as (

    select * from {{ changed_rows(ref('int_outcomes_paired_to_policies')) }}

),

panel_rows as (

    select
        panel_id,
        panel_name,
        panel_key_id,
        panel_kind,
        panel_definition_name,
        item_id
    from {{ changed_rows(ref('int_panels_defined')) }}

),

members as (

    select
        panel_id,
        reader_id
    from {{ ref('int_panel_memberships') }}
    where membership = 'member'

),

cells_in_footprint as (

    select
        panel_rows.panel_id,
        panel_rows.panel_name,
        panel_rows.panel_key_id,
        panel_rows.panel_kind,
        panel_rows.panel_definition_name,
        paired_outcomes.source,
        paired_outcomes.dataset_id,
        paired_outcomes.item_id,
        paired_outcomes.reader_id,
        paired_outcomes.reader_family,
        paired_outcomes.metric,
        paired_outcomes.seed,
        paired_outcomes.raw_policy_id,
        paired_outcomes.compressed_policy_id,
        paired_outcomes.budget_tokens,
        paired_outcomes.raw_score,
        paired_outcomes.compressed_score,
        paired_outcomes.raw_scorer_version,
        paired_outcomes.compressed_scorer_version,
        paired_outcomes.is_binary_metric,
        paired_outcomes.raw_evidence_hash,
        paired_outcomes.compressed_artifact_hash,
        paired_outcomes.raw_prompt_tokens,
        paired_outcomes.compressed_prompt_tokens,
        paired_outcomes.question_type,
        paired_outcomes.item_metadata_json,
        paired_outcomes.transition_type
    from panel_rows
    inner join paired_outcomes
        on
            panel_rows.panel_key_id = paired_outcomes.panel_id
            and panel_rows.item_id = paired_outcomes.item_id
    inner join members
        on
            panel_rows.panel_id = members.panel_id
            and paired_outcomes.reader_id = members.reader_id

)

select * from cells_in_footprint
