"""plur.embed.onnx_bundle: documents and queries on ONNX Runtime from a bundle, without torch.

Real model (the packaged all-MiniLM-L6-v2): the bundle is exported from it once per module, and every
vector is compared with the model's own ``encode`` / eager query path.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from plur.embed.embedder import SentenceTransformerEmbedder
from plur.embed.models_lock import PACKAGED_MODEL, find_spec, load_lock

pytest.importorskip("onnxruntime")
REPO = Path(__file__).resolve().parents[1]
TEXTS = ["hi", "  What did my sister say about the trip to Lisbon last May?  ", "Calvin: I went to the gym",
         "word " * 300, "Ünïcödé café — naïve 東京", "", "a short one", "memory " * 40]


@pytest.fixture(scope="module")
def spec_folder():
    spec = find_spec(load_lock(REPO / "models.lock"), PACKAGED_MODEL)
    return spec, spec.packaged_folder()


@pytest.fixture(scope="module")
def exported(spec_folder, tmp_path_factory):
    """(torch embedder that exported the bundle, the graph cache folder)."""
    spec, folder = spec_folder
    cache = tmp_path_factory.mktemp("graphs")
    emb = SentenceTransformerEmbedder(spec, "cpu", folder=folder, onnx_dir=cache)
    assert emb.bundle is not None and emb.query_runtime == "onnx"
    return emb, cache


def test_bundle_documents_and_queries_equal_the_model(exported) -> None:
    emb, _ = exported
    ref = emb._model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    got = emb.embed_documents(TEXTS)  # batched by length on ONNX Runtime, returned in input order
    assert got.shape == (len(TEXTS), 384) and got.dtype == np.float32
    assert float(np.max(np.abs(got - ref))) <= 1e-5
    q = emb.embed_query("when is the concert")
    assert float(np.max(np.abs(q - emb._embed_eager("when is the concert")))) <= 1e-5


def test_a_later_embedder_serves_from_the_bundle_without_loading_the_model(spec_folder, exported) -> None:
    spec, folder = spec_folder
    emb, cache = exported
    later = SentenceTransformerEmbedder(spec, "cpu", folder=folder, onnx_dir=cache)
    assert later._st is None and later.bundle is not None and later.identity == emb.identity
    np.testing.assert_allclose(later.embed_documents(TEXTS), emb.embed_documents(TEXTS), atol=1e-6)
    long = ["word " * 300, "Calvin: " + "the gym and the market " * 30]
    plain = SentenceTransformerEmbedder(spec, "cpu", folder=folder)  # no bundle: the model's own tokenizer
    assert plain.bundle is None
    got, owners = later.chunk_texts(long, 32)
    want, want_owners = plain.chunk_texts(long, 32)
    assert len(got) > 2 and got == want and owners.tolist() == want_owners.tolist()
    assert later._st is None  # chunking used the bundle's tokenizer


def _resolve_in_fresh_process(home: Path, onnx_dir: Path, extra: str, report: str) -> str:
    """Resolve the packaged model in a new Python process, embed two documents (plus ``extra`` code), and
    return the last line it prints: ``bundle in use, vectors' shape, <report>``."""
    code = ("import sys; from plur.config import load_settings; from plur.embed.resolve import resolve_embedder;"
            f"r = resolve_embedder(load_settings({str(home)!r}, model={PACKAGED_MODEL!r}), "
            f"onnx_dir={str(onnx_dir)!r}); e = r.embedder; v = e.embed_documents(['a', 'b c']); {extra}"
            f"print(e.bundle is not None, v.shape, {report})")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env={"PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split("\n")[-2]


def test_no_torch_is_imported_when_the_bundle_serves(exported) -> None:
    _, cache = exported
    assert _resolve_in_fresh_process(cache / "home", cache, "q = e.embed_query('x');",
                                     "'torch' in sys.modules") == "True (2, 384) False"


def test_a_tampered_bundle_is_not_used_and_is_exported_again(spec_folder, exported, tmp_path: Path, caplog) -> None:
    import shutil

    from plur.embed.onnx_bundle import OnnxBundle, bundle_folder

    spec, folder = spec_folder
    emb, cache = exported
    shutil.copytree(cache / "onnx", tmp_path / "onnx")
    meta_path = bundle_folder(tmp_path, emb.identity) / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["probe_vectors"][1][0] += 0.01  # a graph that no longer gives its probes' vectors
    meta_path.write_text(json.dumps(meta))
    with caplog.at_level("INFO", "plur.embed.onnx_bundle"):
        assert OnnxBundle.open(tmp_path, emb.identity) is None
    assert "not used" in caplog.text and "differs" in caplog.text
    again = SentenceTransformerEmbedder(spec, "cpu", folder=folder, onnx_dir=tmp_path)  # a new export, in a child
    assert again._st is None and again.bundle is not None
    assert OnnxBundle.open(tmp_path, emb.identity) is not None


def test_the_first_export_loads_torch_in_a_child_process_only(tmp_path: Path) -> None:
    """No bundle yet: the process that asked gets one without ever importing torch (it stays in the child,
    ~450 MiB that would otherwise stay resident for the process's life), and its vectors equal the model's."""
    assert _resolve_in_fresh_process(tmp_path / "home", tmp_path / "graphs", "",
                                     "'torch' in sys.modules, e.query_runtime") == "True (2, 384) False onnx"
    assert (tmp_path / "graphs" / "onnx").is_dir()


def test_a_failed_child_export_falls_back_to_this_process(spec_folder, tmp_path: Path, monkeypatch, caplog) -> None:
    """A child that cannot export (here: it is told it is already a child) leaves the export to this process."""
    spec, folder = spec_folder
    monkeypatch.setenv("PLUR_BUNDLE_CHILD", "1")
    emb = SentenceTransformerEmbedder(spec, "cpu", folder=folder, onnx_dir=tmp_path)
    assert emb._st is not None and emb.bundle is not None  # torch here, bundle exported here


def test_embed_runtime_torch_keeps_sentence_transformers(tmp_path: Path) -> None:
    from plur.memory import Memory

    mem = Memory(tmp_path / "h", model=PACKAGED_MODEL, cache_dir=str(tmp_path / "c"), embed_runtime="torch")
    inner = mem.model_resolution().embedder.inner
    assert inner.bundle is None and inner._st is not None and not (tmp_path / "c" / "onnx").exists()
    mem.close()


def test_opening_a_bundle_never_runs_a_batch_padded_to_the_models_limit(exported, monkeypatch) -> None:
    """Issue 49: the probe check ran every probe in one batch, padded to the longest (the 256-token one): ~86 MiB of
    activations, the peak RSS of every process that opened the bundle. Each probe still runs alone, and the
    others still run in one padded batch, so a bundle whose vectors depend on padding is still refused."""
    from plur.embed.onnx_bundle import OnnxBundle

    emb, cache = exported
    batches: list[list[int]] = []
    real = OnnxBundle.embed

    def spy(self, texts, batch_size=64):
        batches.append([len(e.ids) for e in self.encode(texts)])
        return real(self, texts, batch_size)

    monkeypatch.setattr(OnnxBundle, "embed", spy)
    bundle = OnnxBundle.open(cache, emb.identity)
    assert bundle is not None
    limit = bundle.max_seq_length
    assert any(len(b) > 1 for b in batches)                                  # a padded batch is still checked
    assert all(max(b) < limit for b in batches if len(b) > 1), batches      # but never one padded to the limit
    assert any(b == [limit] for b in batches)                               # the longest probe runs alone


def test_a_reindex_whose_chunks_are_all_cached_never_opens_the_bundle(exported, tmp_path: Path, monkeypatch) -> None:
    """Issue 49: every vector in the embedding cache, a rebuild of the indexes made the model's ONNX session anyway
    (~165 MiB of the build's peak RSS at 100k engrams, ~1.4 s of CPU). It is made at the first text the cache lacks
    (or the first query), with the identity it had, so vectors of two models are never mixed."""
    import shutil

    from plur.embed import embedder as embedder_module, onnx_bundle
    from plur.memory import Memory

    _, cache = exported
    shutil.copytree(cache / "onnx", tmp_path / "c" / "onnx")
    texts = ["the boiler is serviced every October", "Calvin: " + "the gym and the market on Sunday " * 30,
             "my sister lives in Lisbon"]
    mem = Memory(tmp_path / "h", model=PACKAGED_MODEL, cache_dir=str(tmp_path / "c"))
    for t in texts:
        mem.learn(t)
    mem.reindex(progress=False)  # every chunk (the long text cut in several) and its cut now in the cache
    identity = mem.model_resolution().embedder.identity
    mem.close()

    opened: list[str] = []
    real_init = onnx_bundle.OnnxBundle.__init__

    def spy(self, folder, threads=None):
        opened.append(str(folder))
        real_init(self, folder, threads)

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(onnx_bundle.OnnxBundle, "__init__", spy)
    monkeypatch.setattr(embedder_module, "_load_sentence_transformer", no_model)
    mem = Memory(tmp_path / "h", model=PACKAGED_MODEL, cache_dir=str(tmp_path / "c"))
    emb = mem.model_resolution().embedder
    assert mem.reindex(progress=False)["engrams"] == 3
    assert emb.stats.misses == 0 and emb.identity == identity and opened == []
    hits = mem.recall("where does my sister live", 2)  # the first query opens the bundle
    assert len(opened) == 1 and emb.query_runtime == "onnx" and "Lisbon" in hits[0].engram.statement
    mem.learn("a new note about the Lisbon trip")  # a text the cache lacks: embedded by the open bundle
    mem.catch_up(progress=False)
    assert emb.stats.misses == 1 and len(opened) == 1
    mem.close()


def test_a_bundle_query_is_embedded_beside_a_busy_model_thread(exported) -> None:
    """Issue 49: the bundle's query needs no model thread (ONNX Runtime runs from any thread; the query has a
    tokenizer of its own), so it is embedded on the query thread while a document batch holds the model thread,
    to the same vector."""
    import threading

    from plur.embed import model_thread

    emb, _ = exported
    want = emb.bundle.embed(["when is the concert"])[0]
    assert emb.queries_beside_model
    gate = threading.Event()
    busy = model_thread.submit(gate.wait, 120)
    try:
        got = model_thread.submit_query(emb.embed_query, "when is the concert").result(timeout=120)
        assert not busy.done()
    finally:
        gate.set()
    assert np.array_equal(got, want)


def test_a_recall_of_a_new_query_does_not_wait_for_the_model_thread(exported, tmp_path: Path) -> None:
    import threading

    from plur.embed import model_thread
    from plur.memory import Memory

    _, cache = exported
    with Memory(tmp_path / "home", model=PACKAGED_MODEL, cache_dir=str(cache)) as mem:
        dog = mem.learn("The dog is Rex.")
        assert mem.recall("dog", k=1, mode="dense")[0].engram.id == dog.id   # indexes open, caught up
        gate, answered, got = threading.Event(), threading.Event(), []
        model_thread.submit(gate.wait, 120)   # a catch-up batch holds the model thread

        def recall() -> None:
            got.extend(mem.recall("what is the name of my dog", k=1, mode="dense"))
            answered.set()

        threading.Thread(target=recall, daemon=True).start()
        try:
            assert answered.wait(120), "the recall's new query waited for the model thread"
            assert got[0].engram.id == dog.id
        finally:
            gate.set()
