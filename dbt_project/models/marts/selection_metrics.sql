{#
    Evidence selection metrics, one row per benchmark x policy x budget:
    macro means over the policy's artifacts (each item counts once per dataset).
#}

with

artifact_evidence as (

    select
        dataset_id,
        item_id,
        policy_id,
        budget_tokens,
        source_tokens,
        selected_tokens,
        compression_ratio,
        span_recall,
        verbatim_survival,
        evidence_recall,
        is_clipped,
        is_evidence_evaluable,
        provenance_mode
    from {{ ref('stg_generation__artifact_evidence') }}

),

datasets as (

    select dataset_id, benchmark
    from {{ ref('stg_ingest__datasets') }}

),

policies as (

    select policy_id, policy_kind, policy_name, policy_version
    from {{ ref('stg_generation__policies') }}

),

evidence_joined_to_benchmarks as (

    select
        coalesce(datasets.benchmark, artifact_evidence.dataset_id) as benchmark,
        artifact_evidence.*
    from artifact_evidence
    left join datasets
        on artifact_evidence.dataset_id = datasets.dataset_id

),

aggregated as (

    select
        benchmark,
        policy_id,
        budget_tokens,
        count(*) as artifact_count,
        count(distinct dataset_id) as dataset_count,
        count(*) filter (where is_evidence_evaluable) as evaluable_count,
        count(*) filter (where is_clipped) as clipped_count,
        count(*) filter (where provenance_mode = 'verbatim') as verbatim_count,
        avg(evidence_recall) as macro_evidence_recall,
        avg(span_recall) as macro_span_recall,
        avg(verbatim_survival) as macro_verbatim_survival,
        avg(compression_ratio) as macro_compression_ratio,
        sum(selected_tokens) as selected_tokens,
        sum(source_tokens) as source_tokens,
        avg(selected_tokens) as mean_selected_tokens,
        max(selected_tokens) as max_selected_tokens
    from evidence_joined_to_benchmarks
    group by benchmark, policy_id, budget_tokens

),

joined_to_policies as (

    select
        md5(
            aggregated.benchmark || '|' || aggregated.policy_id || '|'
            || cast(aggregated.budget_tokens as varchar)
        ) as selection_metric_id,
        aggregated.benchmark,
        aggregated.policy_id,
        policies.policy_name,
        policies.policy_kind,
        policies.policy_version,
        aggregated.budget_tokens,
        aggregated.artifact_count,
        aggregated.dataset_count,
        aggregated.evaluable_count,
        aggregated.clipped_count,
        aggregated.verbatim_count,
        aggregated.macro_evidence_recall,
        aggregated.macro_span_recall,
        aggregated.macro_verbatim_survival,
        aggregated.macro_compression_ratio,
        case
            when aggregated.source_tokens > 0
                then aggregated.selected_tokens / aggregated.source_tokens
        end as pooled_compression_ratio,
        aggregated.mean_selected_tokens,
        aggregated.max_selected_tokens,
        aggregated.budget_tokens = 0
        or aggregated.max_selected_tokens <= aggregated.budget_tokens
            as is_within_budget
    from aggregated
    left join policies
        on aggregated.policy_id = policies.policy_id

)

select * from joined_to_policies
