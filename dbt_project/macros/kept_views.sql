{#
    Views a partial build keeps (see warehouse/build_scratch.py).

    dbt re-creates every selected view on every run: about a dozen statements
    each (create, rename, comments, drop), a fifth of a second of dbt's time
    per view. `ragledger build` records each view's digest (its compiled SQL
    and docs setting) in the scratch database's ragledger_build.view_digests
    when it creates the view (plain dbt on the same scratch database records
    them too). While it refreshes only the changed datasets, the project is the
    one the last build used (a changed project is a full refresh), so a view
    whose digest is the recorded one is kept as it is. Every other run (a full
    refresh, plain dbt) creates views as dbt does.
#}

{% materialization view, adapter='duckdb' -%}
    {%- set digests = view_digests_table() -%}
    {%- if digests is none -%}
        {{ return(materialization_view_default()) }}
    {%- endif -%}
    {%- set relation = string_literal(this.render()) -%}
    {%- set digest = string_literal(
        local_md5(sql ~ '|' ~ (config.get('persist_docs') | string))
    ) -%}
    {%- if is_partial_refresh() and not flags.FULL_REFRESH -%}
        {%- set existing = load_cached_relation(this) -%}
        {%- call statement('main', fetch_result=True) -%}
            select count(*) from {{ digests }}
            where relation = {{ relation }} and digest = {{ digest }}
        {%- endcall -%}
        {%- if existing is not none and existing.is_view
            and load_result('main')['data'][0][0] == 1 -%}
            {{ return({'relations': [this.incorporate(type='view')]}) }}
        {%- endif -%}
    {%- endif -%}
    {#- forget the old digest first: a run killed at any point leaves no
        digest that does not match its view. The table has no key: DuckDB
        refuses to insert a key deleted while another thread's transaction
        is open. -#}
    {%- call statement('forget_view_digest') -%}
        delete from {{ digests }} where relation = {{ relation }}
    {%- endcall -%}
    {%- do adapter.commit() -%}
    {%- set relations = materialization_view_default() -%}
    {%- call statement('record_view_digest') -%}
        insert into {{ digests }} (relation, digest, created_at)
        values ({{ relation }}, {{ digest }}, current_timestamp)
    {%- endcall -%}
    {%- do adapter.commit() -%}
    {{ return(relations) }}
{%- endmaterialization %}


{% macro view_digests_table() -%}
    {#- ragledger_build.view_digests when the scratch database has it (made by
        `ragledger build`), else none. Every run that creates a view records
        its digest there (plain dbt too), so a recorded digest is always the
        one of the view as it stands. -#}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(adapter.get_relation(
        database=target.database,
        schema='ragledger_build',
        identifier='view_digests'
    )) }}
{%- endmacro %}


{% macro string_literal(text) -%}
    '{{ text | replace("'", "''") }}'
{%- endmacro %}
