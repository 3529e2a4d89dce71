"""Setting ``embed_precision = int8``: the bundle's per-token int8 graph (plur.embed.int8_graph).

Real model (the packaged all-MiniLM-L6-v2), real ONNX Runtime: the float32 bundle is exported once per
module, the int8 graph derived from it; vectors are compared with the float32 bundle's (itself tested
equal to the model's own ``encode`` in test_onnx_bundle.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from plur.embed.embedder import SentenceTransformerEmbedder
from plur.embed.int8_graph import TAG
from plur.embed.models_lock import PACKAGED_MODEL, find_spec, load_lock

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "tests" / "data" / "longmemeval_sample.json"


def _texts(n: int = 300) -> list[str]:
    """Real conversation turns (the bundled LongMemEval sample), short and long, plus edge cases."""
    out: list[str] = ["", "hi", "Ünïcödé café — naïve 東京", "word " * 300]
    for item in json.loads(SAMPLE.read_text(encoding="utf-8")):
        for session in item["haystack_sessions"]:
            out += [turn["content"] for turn in session]
            if len(out) >= n:
                return out[:n]
    return out


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(float32 embedder, int8 embedder) on one graph cache."""
    spec = find_spec(load_lock(REPO / "models.lock"), PACKAGED_MODEL)
    cache = tmp_path_factory.mktemp("graphs")
    f32 = SentenceTransformerEmbedder(spec, "cpu", folder=spec.packaged_folder(), onnx_dir=cache)
    i8 = SentenceTransformerEmbedder(spec, "cpu", folder=spec.packaged_folder(), onnx_dir=cache, precision="int8")
    return f32, i8


def test_int8_vectors_are_close_to_float32_and_their_own_space(pair) -> None:
    f32, i8 = pair
    assert (f32.precision, i8.precision, i8.precision_note) == ("float32", "int8", "")
    assert i8.identity == f32.identity + ":" + TAG and i8.identity.split(":")[0] == f32.identity.split(":")[0]
    texts = _texts()
    a, b = f32.embed_documents(texts), i8.embed_documents(texts)
    assert b.shape == a.shape == (len(texts), 384) and b.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    cos = np.sum(a * b, axis=1)
    # a broken rewrite (wrong scale, saturation) falls far below; without smoothing the mean was ~0.995
    assert float(cos.mean()) >= 0.997 and float(cos.min()) >= 0.98, (cos.mean(), cos.min())
    assert float(np.max(np.abs(a - b))) > 1e-4  # really another graph, not the float32 one again
    q = "what did my sister say about Lisbon"
    assert float(np.dot(i8.embed_query(q), f32.embed_query(q))) >= 0.98


def test_an_int8_vector_does_not_depend_on_its_batch(pair) -> None:
    """Per-token scales: a text gets the same vector alone, in any batch, in any order (the embedding cache
    stores one vector per text). A per-tensor (per-batch) scale differs by ~0.03 here."""
    _, i8 = pair
    texts = _texts(120)
    batched = i8.embed_documents(texts)
    alone = np.stack([i8.embed_documents([t])[0] for t in texts[::7]])
    shuffled = i8.embed_documents(texts[::-1])[::-1]
    assert float(np.max(np.abs(alone - batched[::7]))) <= 1e-6
    assert float(np.max(np.abs(shuffled - batched))) <= 1e-6


def test_the_int8_graph_replaces_every_weight_product(pair) -> None:
    import onnx

    from plur.embed.onnx_bundle import bundle_folder

    _, i8 = pair
    folder = bundle_folder(i8.bundle.folder.parent.parent, i8.identity)
    assert folder == i8.bundle.folder
    graph = onnx.load(str(folder / "model.onnx")).graph
    weights = {init.name for init in graph.initializer}
    ops = [n.op_type for n in graph.node]
    assert ops.count("MatMulInteger") == 36  # 6 layers x (query, key, value, attention out, 2 feed-forward)
    assert not [n for n in graph.node if n.op_type == "MatMul" and n.input[1] in weights]
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["derived_from"] == pair[0].identity and meta["min_probe_cosine"] >= 0.95


def test_a_later_int8_embedder_loads_the_verified_graph_and_never_torch(pair, tmp_path: Path) -> None:
    import shutil

    from plur.embed.onnx_bundle import bundle_folder

    f32, i8 = pair
    spec = find_spec(load_lock(REPO / "models.lock"), PACKAGED_MODEL)
    cache = i8.bundle.folder.parent.parent
    later = SentenceTransformerEmbedder(spec, "cpu", folder=spec.packaged_folder(), onnx_dir=cache, precision="int8")
    assert later._st is None and later.identity == i8.identity
    np.testing.assert_allclose(later.embed_documents(["a", "b c"]), i8.embed_documents(["a", "b c"]), atol=1e-6)
    # a tampered int8 graph (its probes no longer give their stored vectors) is derived again, not used
    shutil.copytree(cache / "onnx", tmp_path / "onnx")
    meta_path = bundle_folder(tmp_path, i8.identity) / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["probe_vectors"][0][0] += 0.01
    meta_path.write_text(json.dumps(meta))
    again = SentenceTransformerEmbedder(spec, "cpu", folder=spec.packaged_folder(), onnx_dir=tmp_path,
                                        precision="int8")
    assert again.precision == "int8"
    assert json.loads(meta_path.read_text())["probe_vectors"][0][0] != meta["probe_vectors"][0][0]
    assert {oct(p.stat().st_mode & 0o777) for p in meta_path.parent.iterdir()} == {"0o600"}  # private, as float32's


def test_a_verified_int8_graph_serves_without_opening_the_float32_bundle(pair, tmp_path: Path) -> None:
    """A later process opens (and probe-checks) one bundle, not two: with the float32 bundle gone, the int8
    embedder still serves, exports nothing and loads no torch."""
    import shutil

    from plur.embed.onnx_bundle import bundle_folder

    f32, i8 = pair
    spec = find_spec(load_lock(REPO / "models.lock"), PACKAGED_MODEL)
    shutil.copytree(i8.bundle.folder.parent.parent / "onnx", tmp_path / "onnx")
    shutil.rmtree(bundle_folder(tmp_path, f32.identity))
    later = SentenceTransformerEmbedder(spec, "cpu", folder=spec.packaged_folder(), onnx_dir=tmp_path, precision="int8")
    assert later.precision == "int8" and later._st is None and later.identity == i8.identity
    assert not bundle_folder(tmp_path, f32.identity).exists()
    np.testing.assert_allclose(later.embed_query("x"), i8.embed_query("x"), atol=1e-6)


def test_int8_that_cannot_serve_falls_back_to_float32_loudly(tmp_path: Path) -> None:
    from plur.config import load_settings
    from plur.embed.resolve import ModelFallbackWarning, resolve_embedder

    settings = load_settings(tmp_path / "h", model=PACKAGED_MODEL, embed_precision="int8", device="cpu")
    with pytest.warns(ModelFallbackWarning, match="int8 not in use: no ONNX graph cache .*embed_runtime = torch"):
        res = resolve_embedder(settings)  # no graph cache (what embed_runtime = torch gives): the torch model serves
    assert res.embedder.precision == "float32" and not res.embedder.identity.endswith("int8rows1")
    assert any("int8" in w for w in res.warnings)
    with pytest.raises(Exception, match="precision='fp8'"):
        SentenceTransformerEmbedder(find_spec(load_lock(REPO / "models.lock"), PACKAGED_MODEL), "cpu",
                                    precision="fp8")


def test_a_home_switched_to_int8_reembeds_and_never_mixes_vectors(tmp_path: Path, caplog) -> None:
    from plur.memory import Memory

    facts = ["The user's dog is called Rex.", "Project atlas uses PostgreSQL 16.", "Deploys go out on Thursdays."]
    cache = str(tmp_path / "c")
    with Memory(tmp_path / "h", model=PACKAGED_MODEL, cache_dir=cache) as mem:
        ids = [mem.learn(f).id for f in facts]
        assert mem.recall("what is my dog called", 1, mode="dense")[0].engram.id == ids[0]
        f32_identity = mem.model_resolution().embedder.identity
        assert mem.model_resolution().as_dict()["precision"] == "float32"
    with caplog.at_level("WARNING", "plur.index"), \
            Memory(tmp_path / "h", model=PACKAGED_MODEL, cache_dir=cache, embed_precision="int8") as mem:
        emb = mem.model_resolution().embedder
        assert emb.identity == f32_identity + ":" + TAG
        assert mem.model_resolution().as_dict()["precision"] == "int8"  # what `plur doctor` prints
        hits = mem.recall("which database does atlas use", 1, mode="dense")
        assert hits[0].engram.id == ids[1]
    assert "rebuilding the dense index" in caplog.text and f":{TAG}|" in caplog.text
    manifest = json.loads((tmp_path / "h" / "index" / "manifest.json").read_text())
    assert manifest["model"].split("|")[0] == f32_identity + ":" + TAG  # the saved index is int8's alone
    dense_meta = json.loads((tmp_path / "h" / "index" / "dense" / "meta.json").read_text())
    assert dense_meta["identity"] == manifest["model"]  # the dense folder names its vectors too
