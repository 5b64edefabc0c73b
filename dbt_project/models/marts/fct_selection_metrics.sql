{#
    Evidence selection metrics, one row per benchmark x policy x budget:
    macro means over the policy's artifacts (each item counts once per
    dataset), exact so that two builds agree to the bit
    (macros/exact_mean.sql), and what compiling them cost.
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
    from {{ ref('stg_ragledger__artifact_evidence') }}

),

artifact_compilations as (

    select
        dataset_id,
        item_id,
        policy_id,
        budget_tokens,
        producer_tokens,
        latency_ms,
        cost_usd
    from {{ ref('stg_ragledger__artifact_compilations') }}

),

datasets as (

    select
        dataset_id,
        benchmark
    from {{ ref('stg_benchmarks__datasets') }}

),

policies as (

    select
        policy_id,
        policy_kind,
        policy_name,
        policy_version
    from {{ ref('stg_ragledger__policies') }}

),

evidence_joined_to_compilations as (

    select
        coalesce(datasets.benchmark, artifact_evidence.dataset_id) as benchmark,
        artifact_evidence.*,
        artifact_compilations.producer_tokens,
        artifact_compilations.latency_ms,
        artifact_compilations.cost_usd
    from artifact_evidence
    left join datasets
        on artifact_evidence.dataset_id = datasets.dataset_id
    left join artifact_compilations
        on {{ join_on_columns(
            'artifact_evidence',
            'artifact_compilations',
            ['dataset_id', 'item_id', 'policy_id', 'budget_tokens']
        ) }}

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
        {{ exact_mean('evidence_recall') }} as macro_evidence_recall,
        {{ exact_mean('span_recall') }} as macro_span_recall,
        {{ exact_mean('verbatim_survival') }} as macro_verbatim_survival,
        {{ exact_mean('compression_ratio') }} as macro_compression_ratio,
        cast(sum(selected_tokens) as bigint) as total_selected_tokens,
        cast(sum(source_tokens) as bigint) as total_source_tokens,
        avg(selected_tokens) as mean_selected_tokens,
        max(selected_tokens) as max_selected_tokens,
        cast(sum(producer_tokens) as bigint) as total_producer_tokens,
        {{ exact_mean('latency_ms') }} as mean_producer_latency_ms,
        {{ exact_sum('cost_usd') }} as total_producer_cost_usd
    from evidence_joined_to_compilations
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
            when aggregated.total_source_tokens > 0
                then
                    aggregated.total_selected_tokens
                    / aggregated.total_source_tokens
        end as pooled_compression_ratio,
        aggregated.total_selected_tokens,
        aggregated.total_source_tokens,
        aggregated.mean_selected_tokens,
        aggregated.max_selected_tokens,
        aggregated.total_producer_tokens,
        aggregated.mean_producer_latency_ms,
        aggregated.total_producer_cost_usd,
        aggregated.budget_tokens = 0
        or aggregated.max_selected_tokens <= aggregated.budget_tokens
            as is_within_budget
    from aggregated
    left join policies
        on aggregated.policy_id = policies.policy_id

)

select * from joined_to_policies
