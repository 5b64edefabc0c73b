from __future__ import annotations

import gzip
import hashlib
import json

import pytest

from warehouse.hashing import canonical_json, sha256_file, sha256_json, sha256_text


def test_sha256_text_is_prefixed_hex_of_utf8():
    text = "Zürich — 東京"
    assert (
        sha256_text(text)
        == "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    )


def test_sha256_text_matches_ragscale_manifest(example_dir):
    # ragscale: compressed_artifact_hash = "sha256:" + sha256(UTF-8 text)
    with open(example_dir / "artifact_manifest.jsonl", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    assert all(
        sha256_text(r["compressed_evidence"]) == r["compressed_artifact_hash"]
        for r in rows
    )


def test_canonical_json_ignores_key_order_and_keeps_unicode():
    a = {"b": [1, 2.5, None], "a": "é"}
    b = {"a": "é", "b": [1, 2.5, None]}
    assert canonical_json(a) == canonical_json(b) == '{"a":"é","b":[1,2.5,null]}'
    assert sha256_json(a) == sha256_json(b)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {"x": [float("-inf")]}])
def test_canonical_json_rejects_non_finite(bad):
    with pytest.raises(ValueError, match="non-finite"):
        canonical_json(bad)


def test_sha256_file_hashes_decompressed_content_of_gzip(tmp_path):
    content = b"a,b\n1,2\n"
    plain = tmp_path / "t.csv"
    plain.write_bytes(content)
    packed = tmp_path / "t.csv.gz"
    packed.write_bytes(gzip.compress(content))
    expected = "sha256:" + hashlib.sha256(content).hexdigest()
    assert sha256_file(plain) == sha256_file(packed) == expected
    assert sha256_file(packed, decompress=False) != expected
