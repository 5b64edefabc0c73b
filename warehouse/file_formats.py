"""The columns a file format must have, one list per format, for every reader of it.

``paired_scores.csv`` (ragscale's scores file, ``specs/ragscale_reference.md``):
ragscale always writes all of :data:`PAIRED_SCORES_REQUIRED`. Its own audit
refuses a file only for the nine of :data:`PAIRED_SCORES_AUDIT_REQUIRED`
("Missing required columns: ...", Validation step 1), so ragledger's audit of a
folder demands those nine and nothing more; the warehouse import also needs
``compressor_id``, the id it files the compressed policy under.
"""

from __future__ import annotations

#: Required by ``ragledger ingest ragscale``, in the file's column order.
PAIRED_SCORES_REQUIRED = (
    "example_id",
    "reader",
    "reader_family",
    "raw_score",
    "compressed_score",
    "candidate_pool_id",
    "compressed_artifact_hash",
    "compressor_id",
    "raw_policy_id",
    "metric",
)
#: Required by ragscale's own audit (and so by ``ragledger audit`` of a folder).
PAIRED_SCORES_AUDIT_REQUIRED = tuple(
    name for name in PAIRED_SCORES_REQUIRED if name != "compressor_id"
)
