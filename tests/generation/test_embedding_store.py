"""raw.embeddings: chunk vectors embedded once per (model, chunk text), read back exactly.

The store's bookkeeping is checked with a plain float32 function; everything
about dense selection runs the real all-MiniLM-L6-v2 (offline, loaded once per
process) on the bundled HotpotQA rows, through ``compile_dataset`` and the
``ragledger compile`` command.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

import warehouse
from generation.artifacts import compile_dataset
from generation.chunking import TokenChunker
from generation.embeddings import EmbeddingStore
from generation.policies import PASSAGE_SEPARATOR, get_policy
from ragledger.cli import main
from warehouse.lake import REPO_ROOT, copy_warehouse

DATASET = "hotpotqa-demo-100"


def _vectors_of(con, model):
    """``{text_sha256: float32 vector}`` as stored, read without the store."""
    rows = con.execute(
        "select text_sha256, vector from raw.embeddings where model = ?", [model]
    ).fetchall()
    return {digest: np.array(vector, dtype=np.float32) for digest, vector in rows}


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# ------------------------------------------------------------ the store alone


def test_store_reads_back_float32_bit_for_bit_and_embeds_each_text_once(con):
    calls = []
    special = np.array(
        [-0.0, 1e-45, 1.1754942e-38, 3.4028235e38, -3.4028235e38, np.pi],
        dtype=np.float32,
    )

    def compute(texts):
        calls.append(list(texts))
        rows = []
        for text in texts:
            row = special.copy()
            row[-1] = np.float32(len(text)) / np.float32(3)
            rows.append(row)
        return np.stack(rows)

    store = EmbeddingStore(con)
    texts = ["alpha", "beta", "alpha", "gamma delta"]
    first = store.vectors("m@1", texts, compute)
    assert calls == [["alpha", "beta", "gamma delta"]]  # distinct, first-seen order
    assert (store.embedded, store.reused) == (3, 1)
    assert first.dtype == np.float32 and first.shape == (4, 6)
    assert store.pending == 3
    with warehouse.transaction(con):
        assert store.write_pending() == 3
    store.committed()
    stored = _vectors_of(con, "m@1")
    for text, row in zip(texts, first, strict=True):
        assert stored[_digest(text)].tobytes() == row.tobytes()  # -0.0, subnormals

    fresh = EmbeddingStore(con)  # another run: nothing to embed
    again = fresh.vectors("m@1", ["gamma delta", "alpha"], compute)
    assert len(calls) == 1 and (fresh.embedded, fresh.reused) == (0, 2)
    assert again.tobytes() == np.stack([first[3], first[0]]).tobytes()
    other_model = fresh.vectors("m@2", ["alpha"], compute)
    assert calls[-1] == ["alpha"] and fresh.embedded == 1
    assert other_model.tobytes() == first[0].tobytes()  # same function, own key


def test_vectors_of_a_rolled_back_transaction_stay_queued(con):
    def compute(texts):
        return np.ones((len(texts), 3), dtype=np.float32)

    store = EmbeddingStore(con)
    store.vectors("m@1", ["a", "b"], compute)
    with pytest.raises(RuntimeError), warehouse.transaction(con):
        store.write_pending()
        raise RuntimeError("the artifact write failed")
    assert con.execute("select count(*) from raw.embeddings").fetchone()[0] == 0
    assert store.pending == 2  # written with the next item that commits
    store.vectors("m@1", ["a", "c"], compute)
    with warehouse.transaction(con):
        assert store.write_pending() == 3
    store.committed()
    assert store.pending == 0
    assert con.execute("select count(*) from raw.embeddings").fetchone()[0] == 3


def test_memory_only_store_keeps_vectors_in_process():
    calls = []

    def compute(texts):
        calls.append(len(texts))
        return np.zeros((len(texts), 2), dtype=np.float32)

    store = EmbeddingStore(memory_bytes=3 * 8)  # three 2-float vectors
    store.vectors("m", ["a", "b", "c"], compute)
    store.vectors("m", ["a", "b", "c"], compute)
    assert calls == [3] and store.pending == 0
    store.vectors("m", ["d"], compute)  # evicts "a", the least recently used
    store.vectors("m", ["a"], compute)
    assert calls == [3, 1, 1]


# ------------------------------------------------------------ dense on real rows


def _items_over(con, budget, n):
    """The first ``n`` bundled items whose context is longer than ``budget``."""
    from generation.tokens import count_tokens

    rows = con.execute(
        "select i.item_id, i.question, list(p.text order by p.position) "
        "from raw.items as i join raw.pool_passages as p using (pool_id) "
        "where i.dataset_id = ? group by 1, 2 order by 1",
        [DATASET],
    ).fetchall()
    chosen = [
        row for row in rows if count_tokens(PASSAGE_SEPARATOR.join(row[2])) > budget
    ]
    return chosen[:n]


def _chunk_texts(passages):
    return [c.text for c in TokenChunker().chunk(PASSAGE_SEPARATOR.join(passages))]


@pytest.fixture(scope="module")
def compiled(loaded_db, tmp_path_factory):
    """A warehouse copy where dense@v1 compiled 2 rows at 600, then at 1000 tokens."""
    from generation.selectors.dense import embedder_id

    path = tmp_path_factory.mktemp("embeddings") / "w.duckdb"
    copy_warehouse(loaded_db, path)
    con = warehouse.connect(path)
    items = _items_over(con, 1000, 2)
    # --limit takes the first items by id: make those the ones over 1000 tokens
    assert [row[0] for row in _items_over(con, 0, 2)] == [row[0] for row in items]
    policy = get_policy("dense")
    first = compile_dataset(con, DATASET, policy, budget=600, limit=2)
    second = compile_dataset(con, DATASET, policy, budget=1000, limit=2)
    again = compile_dataset(con, DATASET, policy, budget=1000, limit=2)
    yield {
        "con": con,
        "path": path,
        "items": items,
        "summaries": (first, second, again),
        "model": embedder_id("all-MiniLM-L6-v2"),
    }
    con.close()


@pytest.mark.slow
def test_second_compile_embeds_nothing_and_reuses_every_chunk(compiled):
    first, second, again = compiled["summaries"]
    chunks = [_chunk_texts(passages) for _, _, passages in compiled["items"]]
    total = sum(len(texts) for texts in chunks)
    distinct = len({_digest(t) for texts in chunks for t in texts})
    assert first.made == 2 and second.made == 2
    assert (first.chunks_embedded, first.chunks_reused) == (distinct, total - distinct)
    assert (second.chunks_embedded, second.chunks_reused) == (0, total)
    assert (again.reused, again.chunks_embedded, again.chunks_reused) == (2, 0, 0)
    assert f"chunks {distinct} embedded, {total - distinct} reused" in first.line()
    assert "chunks 0 embedded" in second.line()
    stored = (
        compiled["con"]
        .execute(
            "select model, count(*), min(dim), max(dim) from raw.embeddings group by 1"
        )
        .fetchall()
    )
    assert stored == [(compiled["model"], distinct, 384, 384)]
    runs = (
        compiled["con"]
        .execute(
            "select counts_json from raw.runs where kind = 'compile' and status = "
            "'finished' order by started_at"
        )
        .fetchall()
    )
    counts = [json.loads(row[0]) for row in runs[-3:]]
    assert [c["chunks_embedded"] for c in counts] == [distinct, 0, 0]


@pytest.mark.slow
def test_stored_vectors_equal_the_model_output_bit_for_bit(compiled):
    from generation.selectors.dense import embed_texts, load_embedder

    model = load_embedder("all-MiniLM-L6-v2")
    stored = _vectors_of(compiled["con"], compiled["model"])
    seen: set[str] = set()
    for _, _, passages in compiled["items"]:  # the compile's batches, item by item
        texts = [
            t for t in dict.fromkeys(_chunk_texts(passages)) if _digest(t) not in seen
        ]
        computed = embed_texts(model, texts)
        for text, vector in zip(texts, computed, strict=True):
            assert stored[_digest(text)].tobytes() == vector.tobytes()
            seen.add(_digest(text))
    assert seen == set(stored)


@pytest.mark.slow
def test_artifacts_are_identical_with_and_without_the_store(compiled):
    texts = dict(
        compiled["con"]
        .execute(
            "select c.item_id || '@' || c.budget_tokens, a.text "
            "from raw.artifact_compilations as c join raw.artifacts as a "
            "using (artifact_hash) where c.policy_id = 'dense@v1'"
        )
        .fetchall()
    )
    direct = get_policy("dense")  # a memory-only store, no warehouse
    for item_id, question, passages in compiled["items"]:
        for budget in (600, 1000):
            evidence = direct.compile(question, passages, budget)
            assert evidence.text == texts[f"{item_id}@{budget}"]
            assert evidence.selected_tokens > 0
    assert direct.impl.embeddings.con is None


def _shared_haystack_file(con, path):
    """A HotpotQA-format file: two questions over one bundled item's context."""
    rows = _items_over(con, 1000, 2)
    (_, question_a, passages), (_, question_b, _) = rows
    context = [[f"doc {n}", [text]] for n, text in enumerate(passages)]
    records = [
        {
            "_id": f"shared-{n}",
            "question": question,
            "answer": "x",
            "type": "bridge",
            "level": "hard",
            "supporting_facts": [["doc 0", 0]],
            "context": context,
        }
        for n, question in enumerate((question_a, question_b))
    ]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


@pytest.mark.slow
def test_two_questions_over_one_haystack_embed_it_once(loaded_db, tmp_path):
    from ingest.benchmarks import ingest_benchmark

    database = tmp_path / "shared.duckdb"
    copy_warehouse(loaded_db, database)
    con = warehouse.connect(database)
    try:
        source = _shared_haystack_file(con, tmp_path / "hotpot_shared.json")
        ingest_benchmark(con, "hotpotqa", source, dataset_id="shared-haystack")
        pools = con.execute(
            "select count(distinct pool_id) from raw.items "
            "where dataset_id = 'shared-haystack'"
        ).fetchone()[0]
        passages = con.execute(
            "select list(text order by position) from raw.pool_passages "
            "where pool_id = (select any_value(pool_id) from raw.items "
            "where dataset_id = 'shared-haystack')"
        ).fetchone()[0]
    finally:
        con.close()
    assert pools == 1
    n = len(_chunk_texts(passages))
    runner = CliRunner()
    args = ["--db", str(database), "compile", "--policy", "dense", "--json"]
    args += ["--dataset", "shared-haystack", "--budget", "600"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["made"] == 2
    assert (summary["chunks_embedded"], summary["chunks_reused"]) == (n, n)
    con = warehouse.connect(database)
    try:
        # the hotpot passages are the bundled ones with new titles: new chunk texts
        assert con.execute("select count(*) from raw.embeddings").fetchone()[0] == n
    finally:
        con.close()


_KILL_AFTER_WRITING = textwrap.dedent(
    """
    import os, signal, sys
    import warehouse
    from generation import embeddings
    from generation.artifacts import compile_dataset
    from generation.policies import get_policy

    real = embeddings.EmbeddingStore.write_pending

    def write_then_die(self):
        written = real(self)
        print("written", written, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # inside the item's transaction

    embeddings.EmbeddingStore.write_pending = write_then_die
    con = warehouse.connect(sys.argv[1])
    compile_dataset(con, "hotpotqa-demo-100", get_policy("dense"), budget=600, limit=1)
    """
)


@pytest.mark.slow
def test_a_killed_compile_leaves_no_embeddings(loaded_db, tmp_path):
    database = tmp_path / "killed.duckdb"
    copy_warehouse(loaded_db, database)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _KILL_AFTER_WRITING, str(database)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == -9, done.stderr[-2000:]
    assert int(done.stdout.split("written")[1].split()[0]) > 0  # it had written
    con = warehouse.connect(database)
    try:
        assert _dense_rows(con) == (0, 0)
    finally:
        con.close()


@pytest.mark.slow
def test_a_failed_compile_leaves_no_embeddings(con, monkeypatch):
    real = EmbeddingStore.write_pending
    written = []

    def write_then_fail(self):
        written.append(real(self))
        raise OSError("disk full")  # after the vectors were inserted

    monkeypatch.setattr(EmbeddingStore, "write_pending", write_then_fail)
    with pytest.raises(OSError):
        compile_dataset(con, DATASET, get_policy("dense"), budget=600, limit=1)
    assert written and written[0] > 0
    assert _dense_rows(con) == (0, 0)
    status, counts = con.execute(
        "select status, counts_json from raw.runs where kind = 'compile' "
        "order by started_at desc limit 1"
    ).fetchone()
    assert status == "failed" and json.loads(counts)["chunks_embedded"] == written[0]


def _dense_rows(con):
    """(raw.embeddings rows, dense@v1 compilations)."""
    return con.execute(
        "select (select count(*) from raw.embeddings), "
        "(select count(*) from raw.artifact_compilations where policy_id = 'dense@v1')"
    ).fetchone()
