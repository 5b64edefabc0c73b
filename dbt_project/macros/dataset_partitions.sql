{#
    Incremental builds by dataset (see warehouse/dbt_runner.py).

    Every outcome, pair, panel and cell belongs to one dataset_id, and a
    dataset's rows depend only on raw rows of that dataset (plus the reader,
    family and policy tables: a change there makes `ragledger build` rebuild
    everything). So `ragledger build` refreshes only the datasets whose raw
    rows changed since the last build: it writes their ids into
    ragledger_build.changed_datasets in the scratch database, and

    - the heavy models are incremental (strategy 'dataset_partitions'): their
      SQL reads only the changed datasets (changed_rows(), on
      in_changed_datasets() or in_changed_panels()) and the strategy deletes those datasets' rows
      (or panels' rows, partition_key='panel_id') before inserting them again;
    - the views between them read only the changed datasets too, except the
      mart views with a partition_key (fct_outcomes, fct_paired_outcomes):
      they read every dataset, and publishing copies their changed datasets.

    Without that table (a full refresh, plain `dbt build` from dbt_project/,
    unit tests), nothing is filtered and the strategy replaces every row.
#}

{% macro has_changed_datasets() -%}
    {#- True when `ragledger build` wrote the changed datasets: a partial refresh. -#}
    {%- if not execute or target.name != 'build' -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set table = adapter.get_relation(
        database=target.database,
        schema='ragledger_build',
        identifier='changed_datasets'
    ) -%}
    {{ return(table is not none) }}
{%- endmacro %}


{% macro is_partial_refresh() -%}
    {#- True while a model is built by a partial refresh. -#}
    {%- if model is not mapping or model.get('resource_type') != 'model' -%}
        {{ return(false) }}
    {%- endif -%}
    {{ return(has_changed_datasets()) }}
{%- endmacro %}


{% macro changed_datasets_table() -%}
    {{ adapter.quote(target.database) }}.ragledger_build.changed_datasets
{%- endmacro %}


{% macro dataset_changed(column) -%}
    {#- The row's dataset changed (partial refresh only). -#}
    {{ column }} in (select dataset_id from {{ changed_datasets_table() }})
{%- endmacro %}


{% macro panel_changed(column) -%}
    {#- The row's panel belongs to a changed dataset (partial refresh only). -#}
    {{ column }} in (
        select panel_id from {{ panels_relation() }}
        where {{ dataset_changed('dataset_id') }}
    )
{%- endmacro %}


{% macro in_changed_datasets(column='dataset_id') -%}
    {#- A predicate: the row's dataset changed (always true on a full build). -#}
    {{ dataset_changed(column) if is_partial_refresh() else 'true' }}
{%- endmacro %}


{% macro changed_rows(relation, partition_key='dataset_id') -%}
    {#-
        The rows of `relation` a partial refresh rebuilds, as a subquery: those
        of the changed datasets (partition_key 'dataset_id') or of their panels
        ('panel_id'); every row on a full build.
    -#}
    {%- set predicate = in_changed_panels(partition_key)
        if partition_key == 'panel_id' else in_changed_datasets(partition_key) -%}
    (select * from {{ relation }} where {{ predicate }})
{%- endmacro %}


{% macro panels_relation() -%}
    {#-
        int_panels_defined (panel_id -> dataset_id), named without ref() so
        unit tests need no fixture for it; every model that calls this reads
        it through its parents, so it is always built first.
    -#}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and node.name == 'int_panels_defined' -%}
        {{ return(api.Relation.create(
            database=node.database, schema=node.schema, identifier=node.alias
        )) }}
    {%- endfor -%}
{%- endmacro %}


{% macro in_changed_panels(column='panel_id') -%}
    {#- A predicate: the row's panel belongs to a changed dataset (always true on
        a full build). -#}
    {{ panel_changed(column) if is_partial_refresh() else 'true' }}
{%- endmacro %}


{% macro get_incremental_dataset_partitions_sql(arg_dict) -%}
    {#-
        Replace the changed datasets' rows: delete them, insert the model's
        (filtered) result. partition_key 'panel_id' (marts without a
        dataset_id column) deletes every row whose panel is not a panel of
        an unchanged dataset, so a panel that vanished goes too.
    -#}
    {%- set target_relation = arg_dict['target_relation'] -%}
    {%- set names = arg_dict['dest_columns'] | map(attribute='name') -%}
    {%- set columns = get_quoted_csv(names) -%}
    {%- set key = config.get('partition_key', 'dataset_id') -%}
    delete from {{ target_relation }}
    {% if not is_partial_refresh() -%}
    where true
    {%- elif key == 'dataset_id' -%}
    where {{ dataset_changed('dataset_id') }}
    {%- else -%}
    where panel_id not in (
        select distinct panel_id from {{ panels_relation() }}
        where not ({{ dataset_changed('dataset_id') }})
    )
    {%- endif %};
    insert into {{ target_relation }} ({{ columns }})
    select {{ columns }} from {{ arg_dict['temp_relation'] }}
{%- endmacro %}


{% macro default__get_where_subquery(relation) -%}
    {#-
        dbt's own (a test's `where` config), plus: while `ragledger build`
        refreshes only the changed datasets, a test of a dataset-partitioned
        model reads only those datasets' rows; the others were tested when
        they were built and have not changed since.
    -#}
    {%- set where = config.get('where', '') -%}
    {%- set partition = partition_test_filter(relation) -%}
    {%- if where or partition -%}
        {%- set filtered -%}
            (select * from {{ relation }} where ({{ where or 'true' }}) and ({{ partition or 'true' }})) dbt_subquery
        {%- endset -%}
        {%- do return(filtered) -%}
    {%- else -%}
        {%- do return(relation) -%}
    {%- endif -%}
{%- endmacro %}


{% macro partition_test_filter(relation) -%}
    {#- The partition predicate for a test of `relation`, or '' (no filter). -#}
    {%- if not execute or relation.identifier is none -%}
        {{ return('') }}
    {%- endif -%}
    {%- set node = (graph.nodes.values()
        | selectattr('resource_type', 'equalto', 'model')
        | selectattr('alias', 'equalto', relation.identifier)
        | list) -%}
    {%- set partitioned = node and is_dataset_partitioned(node[0]) -%}
    {%- if not partitioned or not has_changed_datasets() -%}
        {{ return('') }}
    {%- endif -%}
    {%- if node[0].config.get('partition_key', 'dataset_id') == 'dataset_id' -%}
        {{ return(dataset_changed('dataset_id')) }}
    {%- endif -%}
    {{ return(panel_changed('panel_id')) }}
{%- endmacro %}


{% macro is_dataset_partitioned(node) -%}
    {#-
        The model's rows are kept by dataset: an incremental model of strategy
        'dataset_partitions', or a mart view with a partition_key (published
        into the lake by dataset, see warehouse/dbt_project.py).
    -#}
    {%- set config = node.config -%}
    {{ return(config.get('incremental_strategy') == 'dataset_partitions'
        or (config.get('materialized') == 'view'
            and config.get('partition_key') is not none)) }}
{%- endmacro %}


{% macro duckdb__persist_docs(relation, model, for_relation, for_columns) -%}
    {#-
        dbt's own, except while `ragledger build` refreshes only the changed
        datasets: an incremental model's table then keeps its rows of the
        other datasets and the comments a full build wrote on it (a changed
        description changes the project, and a changed project is a full
        refresh), so writing them again is work for nothing.
    -#}
    {%- set incremental = model.config.get('materialized') == 'incremental' -%}
    {%- if incremental and is_partial_refresh() -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(default__persist_docs(relation, model, for_relation, for_columns)) }}
{%- endmacro %}
