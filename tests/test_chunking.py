"""Dense chunk layout of conversation turns: small chunks, each naming its speaker (plur.index.chunking).

Real model (the session ``embedder`` fixture), real store and indexes; the layout rule itself is
checked with literal engrams.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from plur.config import Settings
from plur.embed.cache import CachedEmbedder, EmbeddingCache
from plur.index.chunking import dense_key, layout, layout_identity
from plur.memory import Memory
from plur.store.engram import Engram

LONG_TURN = ("Calvin: Thanks Dave! The tour was wild and the crowds were huge every night, but honestly the "
             "best part was the quiet mornings in the hotel. If I'm stuck on ideas I go to concerts or play my "
             "favourite albums, and that always helps me jumpstart my inspiration again.")


def _turn(statement: str, speaker: str | None = "Calvin", turn: int = 3) -> Engram:
    source = {"kind": "conversation", "session": "conv/D5", "turn": turn}
    if speaker is not None:
        source["speaker"] = speaker
    return Engram.create(statement, source=source)


def test_layout_gives_turns_small_chunks_with_their_speaker_and_leaves_other_engrams_alone(tmp_path: Path):
    s = Settings(home=tmp_path)
    assert layout(_turn(LONG_TURN), s) == (32, "Calvin: ")
    assert layout(_turn("hi", speaker=None), s) == (32, None)           # a role-only turn: no header
    assert layout(_turn("hi", speaker="  "), s) == (32, None)
    assert layout(Engram.create("The user prefers tea."), s) == (None, None)
    assert layout(_turn("hi"), Settings(home=tmp_path, turn_chunk_tokens=0, chunk_speaker=False)) == (None, None)
    note = Engram.create("The user prefers tea.")
    assert dense_key(note, s) == note.content_hash                       # plain engrams keep their old key
    t = _turn(LONG_TURN)
    assert dense_key(t, s) == f"{t.content_hash}|t32|hCalvin: "
    assert dense_key(t, s) != dense_key(_turn(LONG_TURN, speaker="Dave"), s)
    assert layout_identity(s) == "|turns=32+speaker"
    assert layout_identity(Settings(home=tmp_path, chunk_speaker=False)) == "|turns=32"


def test_document_chunks_cut_a_turn_in_32_token_pieces_that_each_name_the_speaker(embedder, tmp_path: Path):
    inner = embedder.inner if hasattr(embedder, "inner") else embedder
    tok = inner._tokenizer
    with EmbeddingCache(tmp_path / "c.sqlite") as cache:
        cached = CachedEmbedder(inner, cache)
        cached.chunk_tokens, cached.max_chunks = 96, 40
        plain, plain_owners = cached.document_chunks([LONG_TURN, "short note"])
        assert plain == [LONG_TURN, "short note"] and plain_owners.tolist() == [0, 1]
        chunks, owners = cached.document_chunks([LONG_TURN, "short note"], [32, None], ["Calvin: ", None])
        pieces = [c for c, o in zip(chunks, owners) if o == 0]
        assert len(pieces) >= 2 and owners.tolist()[-1] == 1 and chunks[-1] == "short note"
        assert all(p.startswith("Calvin: ") for p in pieces)
        assert not pieces[0].startswith("Calvin: Calvin:")                # the first piece already had it
        for p in pieces[1:]:
            body = p[len("Calvin: "):]
            assert body in LONG_TURN and len(tok(body, add_special_tokens=False)["input_ids"]) <= 32
        assert "jumpstart my inspiration" in pieces[-1]
        vecs, owners2 = cached.embed_document_chunks([LONG_TURN, "short note"], [32, None], ["Calvin: ", None])
        assert vecs.shape == (len(chunks), 384) and vecs.dtype == np.float32
        assert owners2.tolist() == owners.tolist()
        # max_chunks is scaled for smaller chunks: the same length of text is covered
        cached.max_chunks = 1
        few, few_owners = cached.document_chunks([LONG_TURN], [32], [None])
        assert 1 < len(few) <= 3 and LONG_TURN.startswith(few[0])


def test_a_turn_is_found_by_the_sentence_that_answers_and_a_layout_change_re_embeds(plur_home):
    question = "How does Calvin get his inspiration back?"
    with Memory(plur_home, fsync=False) as mem:
        t = mem.learn(LONG_TURN, source={"kind": "conversation", "session": "conv/D5", "turn": 3,
                                         "speaker": "Calvin"})
        mem.learn("Dave: I restored an old car last week and it runs again.",
                  source={"kind": "conversation", "session": "conv/D5", "turn": 4, "speaker": "Dave"})
        hits = mem.recall(question, 2, mode="dense", record=False)
        assert hits[0].engram.id == t.id
        idx = mem._index(True)
        assert idx.dense.vector_count > len(idx.dense)                     # the long turn has several vectors
        assert idx.dense_hashes[t.id] == f"{t.content_hash}|t32|hCalvin: "
        assert idx.model_identity.endswith("|turns=32+speaker")
        with_pieces = hits[0].dense_score
    # a layout change is a new dense identity: the index is rebuilt with one vector per short turn
    with Memory(plur_home, fsync=False, turn_chunk_tokens=0, chunk_speaker=False) as mem:
        hits = mem.recall(question, 2, mode="dense", record=False)
        idx = mem._index(True)
        assert idx.model_identity.endswith("|turns=0") and idx.dense_hashes[t.id] == t.content_hash
        assert idx.dense.vector_count == len(idx.dense) == 2
        assert hits[0].engram.id == t.id and hits[0].dense_score < with_pieces  # its best piece matched better
