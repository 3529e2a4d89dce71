"""The conversation methods of :class:`~plur.memory.Memory` (a mixin it inherits): ingest a chat history,
capture one turn, list and forget conversations. Each is documented here and delegates in one line to the
module that does it (:mod:`.ingest`, :mod:`.capture`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import capture as _capture, ingest as _ingest
from .capture import CaptureResult, Session


class ConversationMethods:
    """Memory formed from conversations: whole histories (:meth:`ingest`) or one turn at a time
    (:meth:`capture`), with the session/turn provenance recall and forgetting rely on."""

    def ingest(self, messages: Any, *, session: str | None = None, date: Any = None, scope: str = "global",
               roles: Sequence[str] = ("user",), format: str | None = None, tags: Sequence[str] = (),
               source: Mapping[str, Any] | None = None, progress: bool | None = None,
               dry_run: bool = False, rules: bool | None = None, personal: bool | None = None,
               forget: bool | None = None) -> Any:
        """Learn a conversation, one engram per turn, with its provenance; re-ingesting adds only new turns.

        Each kept turn becomes an engram of type ``user`` (user turns) or ``reference`` (assistant
        turns, only when ``roles`` includes ``'assistant'``), ``created`` = the turn's own timestamp,
        else its session's date, else ``date``, else now, and ``source`` = the conversation
        provenance ``{kind: conversation, format, session, turn, role, speaker?, ...}``
        (:class:`~plur.formats.chats.turns.Turn`).

        Deduplication is by provenance: a turn whose ``(format, session, turn, role)`` is already stored in
        ``scope`` is skipped, so re-ingesting a file, or the file with turns appended, adds only the new turns.

        Capture's rules (``rules``, default the setting ``capture_rules``; :mod:`plur.memory.rules`) leave out,
        counted in ``left_out``: a turn with nothing to remember (``trivial``: "ok", a slash command such as
        ``/plur capture off``, a bare shell command), a turn that only asks (``question``), a turn handed to
        capture while capture was off (``off``: :func:`plur.memory.rules.off_marks`), and a text the scope
        already holds or an earlier turn of this ingest said (``repeat``: a sentence captured live and then
        ingested from another session is stored once).

        Capture's other two rules apply too (:mod:`plur.memory.ingest_rules`). A user turn that asks to forget
        ("please forget my SSN"; ``forget``, default the setting ``forget_requests``) is not stored (``forget``);
        what it points to in the same conversation, said before it, is not stored either (``forgotten``), and a
        note of that conversation stored before (an earlier ingest, the host's live capture) is forgotten as
        :meth:`forget` forgets (``IngestResult.forgotten``); never a note outside the conversation. A user turn
        about the user ingested into a ``project:`` scope goes to ``global`` (``personal``, default the setting
        ``route_personal``), recalled in every project.

        Credentials in a turn (API keys, tokens, private keys) are redacted before anything is stored or
        compared (:func:`plur.screen.text.screen`, capture's screen); ``secrets`` counts them, and so does
        ``stats.db`` (door ``ingest``) unless ``dry_run``.

        Args:
            messages: decoded conversation data (a list of ``{role, content}`` messages, a ChatGPT
                export, LongMemEval entries, LoCoMo samples, Claude Code events...), a
                :class:`pathlib.Path` of such a file, or a list of ``Turn``.
            session: session id where the data has none (messages: default a hash of the first message).
            date: timestamp for turns without their own or their session's (ISO-8601 or datetime).
            scope: scope of the new engrams.
            roles: which turns to keep (``user``, ``assistant``).
            format: the conversation format (:data:`plur.formats.chats.FORMATS`); default detected.
            tags: tags for every new engram.
            source: extra provenance keys (e.g. ``{"file": ...}``).
            progress: show a tqdm bar on stderr (default: when more than 1,000 turns are new).
            dry_run: write nothing; the result says what would be added (``added``: unstored engrams) and changed.
            rules: apply capture's rules (above); ``None`` = the setting ``capture_rules``.
            personal: route turns about the user to ``global``; ``None`` = the setting ``route_personal``.
            forget: read requests to forget in the conversation; ``None`` = the setting ``forget_requests``.

        Returns:
            An :class:`~plur.formats.chats.turns.IngestResult` (``added``, ``skipped``, ``turns``, ``format``,
            ``changed``: engrams that superseded a stored turn whose text was edited since, ``problems``: each
            malformed item left out, with why: a JSON Lines line that is not JSON, a Claude Code event or
            ChatGPT conversation that cannot be read, a turn over ``max_statement_bytes``; ``left_out``: what
            the rules left out, by reason; ``forgotten``: ids of stored notes the conversation asked to forget).

        Raises:
            ValidationError: data that is malformed as a whole, unknown format/role, bad scope, date or tag;
                a ``format`` given that reads no turn at all from data that holds some other format.
        """
        return _ingest.ingest(self, messages, session=session, date=date, scope=scope, roles=roles, format=format,
                              tags=tags, source=source, progress=progress, dry_run=dry_run, rules=rules,
                              personal=personal, forget=forget)

    def capture(self, text: str, *, session: str, turn: int, role: str = "user", scope: str = "global",
                when: Any = None, agent: str | None = None, mode: str | None = None) -> CaptureResult:
        """Capture one conversation turn: memory forms from the conversation (:mod:`plur.memory.capture`).

        In order: the setting ``capture`` (or ``mode``) decides whether this role is kept (a turn handed over
        while it is ``off`` is marked, without its text, so a later ingest leaves it out too); the secret screen
        redacts keys and tokens; capture's rules (setting ``capture_rules``, :mod:`plur.memory.rules`) leave
        out a turn with nothing to remember ("ok", "thanks", a bare shell or slash command), a turn that only
        asks (a question is never a note: it changes no other note's score) and a text the scope already holds;
        the rest goes through :meth:`ingest` with the conversation provenance
        ``{kind: conversation, format: capture, session, turn, role, capture: true, agent?}``: the same
        ``(session, turn)`` again is skipped, a changed text supersedes the stored one. A user turn that asks to
        forget ("please forget my SSN"; setting ``forget_requests``) is not stored: what it points to is forgotten
        and the next block says so (:mod:`plur.memory.turns.forget_turn`). A user turn about the user said in a
        ``project:`` scope is stored in ``global`` (setting ``route_personal``, :mod:`plur.memory.turns.personal`).

        Args:
            text: the turn's text as the user (or assistant) wrote it.
            session: the conversation's id (non-empty).
            turn: its 0-based position in the conversation (the same ``(session, turn)`` with other text is
                an edit and supersedes).
            role: ``user`` or ``assistant``.
            scope: where the note goes (the conversation's project).
            when: the turn's time (ISO-8601 or aware datetime; default now).
            agent: the host's agent id, kept in the provenance.
            mode: overrides the setting ``capture`` (``user`` | ``all`` | ``off``).

        Returns:
            A :class:`~plur.memory.capture.CaptureResult`: the engrams stored, or why none was
            (``skipped``: ``off``, ``role``, ``trivial``, ``question``, ``known``, ``forget``), the kinds of secret
            redacted, and the ids forgotten at the turn's request.

        Raises:
            ValidationError: blank session, negative turn, unknown role or mode, bad scope or date.
        """
        return _capture.capture(self, text, session=session, turn=turn, role=role, scope=scope, when=when,
                                agent=agent, mode=mode)

    def sessions(self, scope: str | None = None) -> list[Session]:
        """Conversations memory holds turns of (active engrams), newest first.

        Args:
            scope: keep the conversations with turns in this scope only; ``None`` = every scope.

        Returns:
            One :class:`~plur.memory.capture.Session` per conversation.

        Raises:
            ValidationError: ``scope`` is not a valid scope name.
        """
        return _capture.sessions(self, scope)

    def forget_session(self, session: str) -> list[Any]:
        """Forget every engram of conversation ``session``, as one write of any size.

        Each is erased as :meth:`forget` erases one (the file, index rows, cached vectors and its stats.db
        rows; :func:`plur.memory.forget.forget_many`).

        Args:
            session: the conversation's id (:meth:`sessions` lists them).

        Returns:
            The engrams removed.

        Raises:
            NotFoundError: memory holds no turn of ``session``.
        """
        return _capture.forget_session(self, session)
