{#
    The released matrix mapped into the outcome grain: one binary score
    (metric 'correct') per dataset x item x reader x method, seed 0, no budget.
#}
with

source as (

    select * from {{ source('ingest', 'matrix_rows') }}

),

renamed as (

    select
        ---------- ids
        release || ':' || dataset as dataset_id,
        example_id as item_id,
        reader_model as reader_id,
        method as policy_id,
        release as matrix_release,
        file_sha256 as source_file_sha256,

        ---------- strings
        'correct' as metric,
        dataset as benchmark,
        nullif(question_type, '') as question_type,
        generated_answer as answer,
        nullif(transition_type, '') as source_transition_type,

        ---------- numerics
        cast(correct as double) as score,
        judge_score,
        evidence_tokens,
        reader_raw_accuracy as reader_raw_accuracy_percent,
        cast(0 as integer) as budget_tokens,
        cast(0 as integer) as seed,
        line_number as source_line

    from source

)

select * from renamed
