"""Load a ragscale audit folder (the authors' toolkit) into the ``raw`` schema.

Inputs (formats in ``specs/ragscale_reference.md`` sections 4 and 9):

- the dataset JSONL (``example_id``, ``question``, ``reference_answers``,
  ``candidate_pool``, optional ``question_type``, ``difficulty``, ``tags``, ``hints``);
- ``artifact_manifest.jsonl``: one stored compressed text per item with its hash;
- ``paired_scores.csv`` or ``records.jsonl``: one row per item x reader x metric with
  raw and compressed scores and answers;
- optionally ``ragscale.yaml`` (dataset path and name, reader parameters).

What lands: a dataset and its items; candidate pools and passages; two policies
(the raw policy and the compressor); artifacts (the compressed texts and the raw
evidence texts, content-addressed); one compilation per item and policy; readers;
one generation per item x reader x condition; one score per generation x metric.

Every check runs before the first write, and all writes are one transaction:

- each stored compressed text hashes (sha256 of UTF-8, as ragscale computes it) to
  its ``compressed_artifact_hash``; each pool hashes to its ``candidate_pool_id``;
- every reader of an item received the same pool id and the same compressed artifact
  hash as the manifest records (otherwise the panel would not be a fixed-artifact
  panel, and the error names the item and the panel);
- scores are finite and in [0, 1]; (item, reader, metric) is unique; one answer per
  item x reader x condition across metrics.
"""

from ingest.ragscale.read import (
    RagscaleFiles,
    RagscaleLoadResult,
    evidence_text,
    find_files,
)
from ingest.ragscale.write import load_ragscale

__all__ = [
    "RagscaleFiles",
    "RagscaleLoadResult",
    "evidence_text",
    "find_files",
    "load_ragscale",
]
