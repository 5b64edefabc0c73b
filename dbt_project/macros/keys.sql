{#
    The key expressions the models share: a key hashed from columns (the
    outcome_id of an outcome, the panel_id of a panel key and of a panel), and
    the equality of two relations on the columns of a key (the join of a
    pairing, of a panel's rows to its outcomes, of an artifact's evidence to
    its compilation).
#}

{% macro hash_key(columns, length=none) -%}
    {#-
        md5 of the columns as text joined by '|' (a null column is skipped,
        as concat_ws does); the first `length` hex characters when given.
    -#}
    {%- set hashed -%}
        md5(concat_ws('|', {% for column in columns -%}
            cast({{ column }} as varchar){{ ', ' if not loop.last }}
        {%- endfor %}))
    {%- endset -%}
    {{ hashed if length is none else 'left(' ~ hashed ~ ', ' ~ length ~ ')' }}
{%- endmacro %}


{% macro join_on_columns(left, right, columns) -%}
    {#- left.c = right.c for every column c of the key, joined by and. -#}
    {%- for column in columns -%}
        {{ left }}.{{ column }} = {{ right }}.{{ column }}
        {{- ' and ' if not loop.last }}
    {%- endfor -%}
{%- endmacro %}
