{#
    The sum and the mean of a double column, independent of row order and
    thread count: each value is cast to decimal(38, 18) (DuckDB rounds value x
    10^18 to an integer), the decimals are summed exactly, and the sum is cast
    back to a double; the mean divides it by the count of non-null values in
    double precision. A plain sum() or avg() adds doubles in whatever order the
    threads meet them, so two builds can differ in the last digit.
    Null when there are no non-null values. For |values| < 1e20.
#}
{% macro exact_sum(column) -%}
    cast(sum(cast({{ column }} as decimal(38, 18))) as double)
{%- endmacro %}


{% macro exact_mean(column) -%}
    {{ exact_sum(column) }}
    / nullif(count({{ column }}), 0)
{%- endmacro %}
