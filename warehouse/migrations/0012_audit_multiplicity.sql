-- Issue 23 item 8: multiplicity-aware audit results. A statistics row that
-- reports a test carries its p-value and the Holm and Benjamini-Hochberg
-- values adjusted across every p-value of the same audit call (the family:
-- docs/statistics.md section 12); null on rows that report no test.

alter table analysis.statistics add column p_value double;
alter table analysis.statistics add column p_holm double;
alter table analysis.statistics add column p_bh double;
