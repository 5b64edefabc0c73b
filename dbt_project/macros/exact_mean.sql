{#
    The mean of a double column, independent of row order and thread count:
    each value is cast to decimal(38, 18) (DuckDB rounds value x 10^18 to an
    integer), the decimals are summed exactly, and the sum (as a double) is
    divided by the count of non-null values in double precision. A plain avg() sums doubles in whatever order the
    threads meet them, so two builds can differ in the last digit.
    Null when there are no non-null values. For |values| < 1e20.
#}
{% macro exact_mean(column) -%}
    cast(sum(cast({{ column }} as decimal(38, 18))) as double)
    / nullif(count({{ column }}), 0)
{%- endmacro %}
