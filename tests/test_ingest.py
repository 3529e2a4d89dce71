"""Conversation ingest: each format's fixture, re-ingest with one more turn, recall a fact from it."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import pytest

from plur.errors import ValidationError
from plur.memory import Memory
from plur.formats import chats as conv

DATA = Path(__file__).resolve().parent / "data"
FIX = DATA / "ingest"


def _append_messages(data: list[Any]) -> list[Any]:
    return data + [{"role": "user", "content": "My passport expires in March 2026."}]


def _append_claude(events: list[Any]) -> list[Any]:
    last = events[-2]  # the last main-chain event (the final one is a sidechain event)
    new = dict(last, type="user", uuid="a1b2c3d4-0008-4e5f-8a9b-0c1d2e3f4a5b", parentUuid=last["uuid"],
               timestamp="2025-07-20T09:20:00.000Z", message={"role": "user", "content": "My passport expires in March 2026."})
    new.pop("isSidechain", None)
    return events + [new]


def _append_chatgpt(convs: list[Any]) -> list[Any]:
    out = copy.deepcopy(convs)
    c = out[0]
    c["mapping"]["a-2b"]["children"] = ["u-3"]
    c["mapping"]["u-3"] = {"id": "u-3", "parent": "a-2b", "children": [], "message": {
        "id": "u-3", "author": {"role": "user", "name": None, "metadata": {}}, "create_time": 1717236300.0,
        "content": {"content_type": "text", "parts": ["My passport expires in March 2026."]},
        "status": "finished_successfully", "weight": 1.0, "metadata": {}, "recipient": "all"}}
    c["current_node"] = "u-3"
    return out


def _append_longmemeval(entries: list[Any]) -> list[Any]:
    out = copy.deepcopy(entries)
    out[1]["haystack_sessions"][1].append({"role": "user", "content": "My passport expires in March 2026."})
    return out


def _append_locomo(samples: list[Any]) -> list[Any]:
    out = copy.deepcopy(samples)
    out[0]["conversation"]["session_2"].append({"speaker": "Mira", "dia_id": "D2:3",
                                               "text": "My passport expires in March 2026."})
    return out


CASES: dict[str, tuple[str, int, Callable[[Any], Any], str, str]] = {
    # format: (fixture, user turns stored (LongMemEval's fourth only asks), append one turn, query, expected fact)
    "messages": ("messages.json", 3, _append_messages, "peanut allergy", "allergic to peanuts"),
    "claude-code": ("claude_code.jsonl", 2, _append_claude, "which database is used for staging", "billing_stage"),
    "chatgpt": ("chatgpt_conversations.json", 3, _append_chatgpt, "what herbs does the user want to grow", "mint and parsley"),
    "longmemeval": ("longmemeval.json", 3, _append_longmemeval, "which city did I move to", "Porto"),
    "locomo": ("locomo.json", 5, _append_locomo, "what instrument does Mira play", "cello"),
}


def _write(path: Path, data: Any, jsonl: bool) -> Path:
    text = "".join(json.dumps(e) + "\n" for e in data) if jsonl else json.dumps(data)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", list(CASES))
def test_each_format_round_trip(fmt: str, memory: Memory, tmp_path: Path) -> None:
    name, n_user, append, query, fact = CASES[fmt]
    src = FIX / name
    data = conv.load(src)
    assert conv.detect_format(data, name) == fmt
    first = memory.ingest(src)
    assert first.format == fmt and len(first.added) == n_user and first.skipped == 0
    for e in first.added:
        s = e.source
        assert {"kind", "format", "session", "turn", "role"} <= set(s) and s["kind"] == "conversation"
        assert s["format"] == fmt and s["role"] == "user" and e.type == "user"
        assert isinstance(s["session"], str) and isinstance(s["turn"], int) and s["turn"] >= 0
    # the same file again: nothing new
    again = memory.ingest(src)
    assert again.added == () and again.skipped == n_user
    # the file with one more turn: exactly that turn is added
    grown = _write(tmp_path / f"grown{src.suffix}", append(data), src.suffix == ".jsonl")
    more = memory.ingest(grown)
    assert [e.statement.split(": ", 1)[-1] for e in more.added] == ["My passport expires in March 2026."]
    assert more.skipped == n_user
    assert len(memory.list()) == n_user + 1
    hits = memory.recall(query, 3)
    assert hits and fact in hits[0].engram.statement, [h.engram.statement for h in hits]


def test_turn_timestamps_become_created() -> None:
    turns = conv.read_conversation(FIX / "claude_code.jsonl")
    assert [t.created for t in turns if t.role == "user"] == [
        datetime(2025, 7, 20, 9, 15, 2, 118000, tzinfo=timezone.utc),
        datetime(2025, 7, 20, 9, 17, 31, 950000, tzinfo=timezone.utc)]
    lme = conv.read_conversation(FIX / "longmemeval.json")
    assert lme[0].created == datetime(2023, 5, 20, 2, 21, tzinfo=timezone.utc)   # the session date
    loc = conv.read_conversation(FIX / "locomo.json")
    assert loc[0].created == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def test_claude_code_skips_tool_results_meta_thinking_and_sidechains() -> None:
    turns = conv.read_conversation(FIX / "claude_code.jsonl")
    assert [(t.turn, t.role, t.text) for t in turns] == [
        (0, "user", "We run the billing tests with make test-billing, never with plain pytest."),
        (1, "assistant", "Understood, I will use make test-billing."),
        (2, "user", "The staging database is called billing_stage and lives on db2."),
        (3, "assistant", "Noted: billing_stage on db2.")]
    assert {t.session for t in turns} == {"3f9b2c1e-8d4a-4e7b-a1c2-5d6e7f8a9b0c"}


def test_chatgpt_follows_the_current_branch_only() -> None:
    turns = conv.read_conversation(FIX / "chatgpt_conversations.json")
    texts = [t.text for t in turns if t.session.startswith("6659")]
    assert "I want to grow tomatoes." not in texts            # the abandoned branch
    assert texts == ["My balcony faces north and gets only two hours of sun.",
                     "Shade-tolerant plants such as ferns and hostas will do well there.",
                     "I would rather grow mint and parsley in window boxes.",
                     "Mint and parsley both tolerate partial shade."]
    assert turns[0].extra["title"] == "Garden planning"


def test_locomo_keeps_speaker_and_image_caption() -> None:
    turns = conv.read_conversation(FIX / "locomo.json")
    bike = turns[1]
    assert bike.speaker == "Tomas" and bike.role == "user" and bike.session == "hand-1:session_1" and bike.turn == 1
    assert bike.text == ("Tomas: That's great! I've been restoring an old bicycle. "
                         "[image: a photo of a red vintage bicycle in a garage]")
    assert bike.source()["speaker"] == "Tomas"


def test_longmemeval_shared_sessions_are_read_once_and_turns_count_every_role() -> None:
    turns = conv.read_conversation(FIX / "longmemeval.json")
    keys = [t.key for t in turns]
    assert len(keys) == len(set(keys))
    juno = [t for t in turns if t.session == "answer_hand_2"]
    assert [(t.turn, t.role) for t in juno] == [(0, "user"), (1, "assistant"), (2, "user")]
    assert juno[0].extra == {"has_answer": True}


def test_assistant_turns_are_opt_in_and_typed_reference(memory: Memory) -> None:
    out = memory.ingest(FIX / "messages.json", roles=("user", "assistant"))
    types = {e.source["role"]: e.type for e in out.added}
    assert types == {"user": "user", "assistant": "reference"}
    assert len(out.added) == 5           # the system message is not a turn
    # turn numbers count both roles, so user-only and user+assistant ingests agree on them
    assert [e.source["turn"] for e in out.added] == [0, 1, 2, 3, 4]
    again = memory.ingest(FIX / "messages.json")
    assert again.added == () and again.skipped == 3


def test_equal_turns_in_different_sessions_are_two_engrams_with_the_rules_off(memory: Memory) -> None:
    a = memory.ingest([{"role": "user", "content": "Yes, please."}], session="s1", rules=False)
    b = memory.ingest([{"role": "user", "content": "Yes, please."}], session="s2", rules=False)
    assert len(a.added) == len(b.added) == 1 and a.added[0].id != b.added[0].id
    assert memory.ingest([{"role": "user", "content": "Yes, please."}], session="s1", rules=False).added == ()
    # learn of the same text still deduplicates against what is stored
    assert memory.learn("Yes, please.").id in {a.added[0].id, b.added[0].id}


def test_messages_without_session_get_a_stable_one_from_the_first_message(memory: Memory) -> None:
    msgs = [{"role": "user", "content": "I live in Lisbon."}]
    first = memory.ingest(msgs)
    grown = memory.ingest(msgs + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "I like fado."}])
    assert len(first.added) == 1 and len(grown.added) == 1
    assert first.added[0].source["session"] == grown.added[0].source["session"]
    other = memory.ingest([{"role": "user", "content": "Another conversation."}])
    assert other.added[0].source["session"] != first.added[0].source["session"]


def test_two_chats_that_open_alike_are_two_conversations_and_nothing_is_retired(memory: Memory) -> None:
    """A derived session is the hash of the first message: "Hi" opened both chats, and the second one's
    third turn superseded (retired) the first one's."""
    opening = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"}]
    chat1 = opening + [{"role": "user", "content": "My sister Lena lives in Vienna."}]
    chat2 = opening + [{"role": "user", "content": "I am allergic to penicillin."}]
    one = memory.ingest(chat1, roles=("user", "assistant"), rules=False)   # "Hi" and the question kept: the
    two = memory.ingest(chat2, roles=("user", "assistant"), rules=False)   # sessions are what this is about
    assert len(one.added) == 3 and two.changed == () and len(two.added) == 3
    lena = one.added[2]
    assert memory.get(lena.id).status == "active"
    assert {e.statement for e in memory.list(status="active")} >= {"My sister Lena lives in Vienna.",
                                                                  "I am allergic to penicillin."}
    assert two.added[2].source["session"] != lena.source["session"]
    again = memory.ingest(chat2 + [{"role": "user", "content": "And I run marathons."}], roles=("user", "assistant"),
                          rules=False)
    assert [e.statement for e in again.added] == ["And I run marathons."] and again.changed == ()
    assert again.added[0].source["session"] == two.added[2].source["session"]  # stable once appended
    assert memory.ingest(chat1, roles=("user", "assistant"), rules=False).added == ()   # the first chat: unchanged


def test_date_fills_turns_without_time_and_extra_source_keys(memory: Memory) -> None:
    out = memory.ingest([{"role": "user", "content": "We adopted a cat."}], session="x", date="2024-02-03",
                        source={"file": "chat.json"})
    e = out.added[0]
    assert e.created == datetime(2024, 2, 3, tzinfo=timezone.utc)
    assert e.source == {"kind": "conversation", "format": "messages", "session": "x", "turn": 0, "role": "user",
                        "file": "chat.json"}


def test_real_longmemeval_entry_ingests(plur_home: Path) -> None:
    """The committed real LongMemEval-S question: every user turn once, dated by its session (BM25 only)."""
    data = json.loads((DATA / "longmemeval_sample.json").read_text(encoding="utf-8"))
    n_user = sum(1 for s in data[0]["haystack_sessions"] for t in s if t["role"] == "user" and t["content"].strip())
    with Memory(plur_home, model="none") as mem:
        out = mem.ingest(data, progress=False)
        assert out.format == "longmemeval" and len(out.added) + sum(n for _, n in out.left_out) == n_user
        assert dict(out.left_out).get("question") and mem.ingest(data, progress=False).added == ()
        assert all(e.created.year == 2023 for e in out.added)


@pytest.mark.parametrize(("data", "fix"), [
    ({"foo": 1}, "pass --format"),
    ([{"statement": "x"}], "plur import"),
    ([{"role": 3, "content": "x"}], "text 'role'"),
    ([], "holds no messages"),
    ({}, "holds no messages"),
])
def test_bad_input_names_the_problem(data: Any, fix: str, memory: Memory) -> None:
    with pytest.raises(ValidationError, match=fix):
        memory.ingest(data)


def test_bad_roles_and_format_are_refused(memory: Memory) -> None:
    with pytest.raises(ValidationError, match="roles"):
        memory.ingest([{"role": "user", "content": "x"}], roles=("system",))
    with pytest.raises(ValidationError, match="unknown conversation format"):
        memory.ingest([{"role": "user", "content": "x"}], format="whatsapp")


def test_an_oversized_turn_is_left_out_and_named_and_the_rest_is_ingested(plur_home: Path) -> None:
    msgs = [{"role": "user", "content": "short"}, {"role": "user", "content": "x" * 2000},
            {"role": "user", "content": "after"}]
    with Memory(plur_home, model="none", max_statement_bytes=1000) as mem:
        out = mem.ingest(msgs, session="big")
        assert [e.statement for e in out.added] == ["short", "after"]
        assert len(out.problems) == 1 and out.problems[0][0] == "messages: session 'big' turn 1"
        assert "2000 bytes" in out.problems[0][1]
        with pytest.raises(ValidationError, match="pathlib.Path"):
            mem.ingest("chat.json")


def _turn(session: str, n: int, text: str) -> Any:
    return conv.Turn("messages", session, n, "user", text, None)


def test_one_turn_per_call_does_not_reread_every_engram(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Capture ingests one turn per call: the provenance map is kept between calls (per store generation and
    carried over its own writes) instead of re-read from every engram each time (O(n) per turn)."""
    mem = Memory(tmp_path / "home", model="none", fsync=False)
    mem.ingest([_turn("s1", i, f"fact number {i} about the garden") for i in range(60)])
    calls = [0]
    real = conv.source_key

    def counted(src: Any) -> Any:
        calls[0] += 1
        return real(src)

    monkeypatch.setattr(conv, "source_key", counted)
    for i in range(60, 70):
        assert len(mem.ingest([_turn("s1", i, f"fact number {i} about the garden")]).added) == 1
    assert calls[0] <= 3 * 10 + 70, calls[0]            # before: every engram's provenance at every call (~650)
    again = mem.ingest([_turn("s1", i, f"fact number {i} about the garden") for i in range(70)])
    assert again.added == () and again.skipped == 70
    mem.close()


def test_the_kept_provenance_follows_forget_and_other_writers(tmp_path: Path) -> None:
    home = tmp_path / "home"
    mem = Memory(home, model="none", fsync=False, refresh_interval_s=0)
    first = mem.ingest([_turn("s1", 0, "my sister Lena moved to Vienna")]).added[0]
    mem.ingest([_turn("s1", 1, "she works at the opera")])
    mem.forget(first.id)                                  # a forgotten turn is ingested again
    assert len(mem.ingest([_turn("s1", 0, "my sister Lena moved to Vienna")]).added) == 1
    with Memory(home, model="none", fsync=False) as other:  # another process stores turn 2
        other.ingest([_turn("s1", 2, "her cat is called Mozart")])
    out = mem.ingest([_turn("s1", 2, "her cat is called Mozart"), _turn("s1", 3, "she visits in May")])
    assert [e.statement for e in out.added] == ["she visits in May"] and out.skipped == 1
    assert len(mem.list()) == 4
    mem.close()


def test_claude_code_skips_slash_commands_shell_commands_and_their_output(tmp_path: Path) -> None:
    """Claude Code logs what the user did as user events: `/model`, its output, `!ls`, an interruption. They were
    ingested as notes about the user; now skipped, and the turns after them keep their numbers."""
    events = [json.loads(line) for line in (FIX / "claude_code.jsonl").read_text().splitlines() if line.strip()]
    said = [e for e in events if e.get("type") == "user" and not e.get("isMeta") and not e.get("isSidechain")
            and isinstance(e["message"]["content"], str)]
    did = ["<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args></command-args>",
           "<local-command-stdout>Set model to opus</local-command-stdout>",
           "<bash-input>ls -la</bash-input>", "<bash-stdout>total 8</bash-stdout><bash-stderr></bash-stderr>",
           "[Request interrupted by user for tool use]"]
    before = conv.read_conversation(FIX / "claude_code.jsonl")
    out = tmp_path / "session.jsonl"
    at = events.index(said[-1])                        # the commands come before the last thing the user said
    extra = [{**said[0], "uuid": f"did-{n}", "message": {"role": "user", "content": text}} for n, text in enumerate(did)]
    out.write_text("".join(json.dumps(e) + "\n" for e in [*events[:at], *extra, *events[at:]]))
    turns = conv.read_conversation(out)
    assert [t.text for t in turns] == [t.text for t in before]
    assert turns[-1].turn == before[-1].turn + len(did)      # they keep their place in the numbering
