"""One frozen :class:`Settings` object.

Precedence (lowest to highest): the defaults in :data:`SETTINGS` <
``<home>/config.toml`` < ``PLUR_<NAME>`` environment variables < keyword
arguments to :func:`load_settings`. The :data:`SETTINGS` table is the single
source of truth: it drives parsing, ``plur doctor``, the docs' settings
table and a test that fails when a setting is undocumented.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .values import check_home, parse_value


@dataclass(frozen=True)
class Setting:
    """One row of the settings table: name, default, type and help (with units)."""

    name: str
    default: Any
    type: type
    help: str
    choices: tuple[str, ...] | None = None
    #: inclusive ``(low, high)`` bounds of a number setting, checked at load (NaN is always refused).
    range: tuple[float, float] | None = None


SETTINGS: tuple[Setting, ...] = (
    Setting("model", "BAAI/bge-small-en-v1.5", str,
            "Embedding model: a name pinned in models.lock, a local folder path, or 'none' for BM25 only."),
    Setting("device", "auto", str, "Embedding device: auto (cuda, then mps, then cpu), cuda, mps or cpu.",
            ("auto", "cuda", "mps", "cpu")),
    Setting("cache_dir", "", str,
            "Folder of the embedding cache (SQLite keyed by model identity + text sha256) and the exported ONNX query "
            "graphs; empty = <home>/cache for the first and ~/.cache/plur ($XDG_CACHE_HOME/plur) for the second."),
    Setting("embed_batch_size", 16, int,
            "Texts per embedding batch (16: fastest on CPU here and the lowest peak RSS; raise it on a GPU).", range=(1, 4096)),
    Setting("allow_fallback", True, bool,
            "If the configured model cannot be loaded, fall back (loudly) to the packaged all-MiniLM-L6-v2, "
            "then to BM25 only."),
    Setting("bm25_k1", 1.5, float, "BM25 term-frequency saturation k1 (Robertson & Zaragoza 2009; rank-bm25 default).", range=(0, 100)),
    Setting("bm25_b", 0.75, float, "BM25 length normalisation b (0 = none, 1 = full).", range=(0, 1)),
    Setting("stemming", True, bool,
            "Apply the Snowball English stemmer (PyStemmer) to tokens (on: +0.033 turn / +0.018 session BM25 NDCG@5 on LoCoMo)."),
    Setting("fusion", "weighted", str,
            "How BM25 and dense rankings are fused: weighted (sum of absolute [0, 1] leg scores; won on LoCoMo, "
            "see docs/benchmarks.md) or rrf.", ("rrf", "weighted")),
    Setting("rrf_k", 60, int, "RRF constant k (Cormack, Clarke & Buettcher, SIGIR 2009).", range=(1, 100000)),
    Setting("dense_weight", 0.6, float,
            "Weight of the dense leg in weighted fusion (0..1); BM25 gets the rest (0.6 had the best turn R@10 + "
            "NDCG@5 of 0.3-0.7 on LoCoMo conversations 1-5 once both legs score every candidate).", range=(0, 1)),
    Setting("candidates", 100, int, "Candidates taken from each leg before fusion (per leg, engrams).", range=(1, 100000)),
    Setting("context_window", 2, int,
            "Conversation turns on each side of a turn added to its BM25 document (same source.session and "
            "scope; 0 = the bare turn). The dense leg embeds the bare turn. 2 beat 1 and 3 on LoCoMo conversations 1-5.", range=(0, 50)),
    Setting("context_own_weight", 2, int,
            "Times a turn's own text counts in its BM25 document against once for each neighbour "
            "(a BM25F-style field weight; 1 = plain concatenation). 2 beat 1, 3 and 4 (hybrid) on LoCoMo conversations 1-5.", range=(1, 10)),
    Setting("index_dates", True, bool,
            "Add the engram's date words (day, month, year, weekday of `created`) to its BM25 document "
            "(on: +0.015 turn NDCG@5 hybrid on LoCoMo conversations 1-5)."),
    Setting("date_boost", 0.5, float,
            "When a query names a date (docs: Recall, 'Dates in recall'), engrams dated in it gain this share of the "
            "best candidate's fused score (0 = off).", range=(0, 10)),
    Setting("date_mentions", True, bool,
            "A query's dates also match the dates an engram's text names, resolved against the engram's own date "
            "('yesterday' in a turn of 17 March 2022 = 16 March 2022; docs: Recall, 'Dates in recall')."),
    Setting("reranker", "", str,
            "Optional second stage over the fused top rerank_top_n: a cross-encoder pinned in models.lock "
            "[rerankers] (e.g. BAAI/bge-reranker-base) or a model folder; '' = off. Quality not measured here."),
    Setting("rerank_top_n", 30, int, "Candidates the reranker reorders (engrams; only when reranker is set).", range=(1, 10000)),
    Setting("hnsw_m", 16, int, "HNSW graph degree M (usearch connectivity).", range=(2, 256)),
    Setting("hnsw_quantisation", "b1", str,
            "What the HNSW graph stores per dimension: b1 (one sign bit of the vector minus the rows' mean, Hamming "
            "distance; max(256, 4 x k) candidates re-scored with the exact vectors) or i8 (int8, inner product; max(k, "
            "64) re-scored). On 157k real MiniLM vectors b1 took the graph from 79.8 to 29.4 MiB and recall@10 of the "
            "exact top 10 from 0.974 to 0.988, for ~5.6 ms more CPU a dense search. A saved graph keeps its kind "
            "until its next rebuild (plur reindex).", ("b1", "i8")),
    Setting("hnsw_ef_construction", 96, int,
            "HNSW ef at construction time. 96: recall@10 0.980 of the exact top 10 on 135k real MiniLM vectors "
            "(64 candidates re-scored exactly; 0.988 at 128, 0.969 at 64), build ~1.6x faster than 200.", range=(1, 100000)),
    Setting("hnsw_ef_search", 128, int, "HNSW ef at query time (raised to the candidates asked for when more; "
            "see hnsw_quantisation for how many are asked for and re-scored with the exact vectors).", range=(1, 100000)),
    Setting("index_threads", 0, int,
            "Threads inserting into the HNSW graph (0 = every core).", range=(0, 256)),
    Setting("exact_threshold", 20000, int,
            "Below this many vectors dense search is exact (numpy matmul) instead of HNSW.", range=(0, 1000000000)),
    Setting("max_statement_bytes", 1048576, int, "Largest statement accepted, in UTF-8 bytes (1 MiB).", range=(1, 67108864)),
    Setting("max_input_bytes", 268435456, int,
            "Most memory one file from outside may take to read (plur ingest, plur import, a linked memory folder), "
            "in bytes: what it decompresses to, plus what its parsed JSON, YAML or lines are estimated to hold; a "
            "larger file is refused with one line before it is read whole (256 MiB keeps a read under 400 MiB).",
            range=(1048576, 1 << 40)),
    Setting("embed_chunk_tokens", 96, int,
            "Tokens per dense chunk of a long engram (its best chunk is its cosine; 0 = the model's input limit). "
            "96 had the best session R@5 + NDCG@5 of 32/64/96/128/limit on LoCoMo conversations 1-5.", range=(0, 8192)),
    Setting("max_embed_chunks", 40, int,
            "Most chunks embedded per engram; text past them is found by BM25 only. Bounds the indexing cost "
            "of one engram (40 x 96 tokens ~ 3,400 words; a 1 MiB statement is ~3,000 chunks).", range=(1, 4096)),
    Setting("turn_chunk_tokens", 32, int,
            "Tokens per dense chunk of a conversation turn (an engram with conversation provenance); 0 = "
            "embed_chunk_tokens. 32 beat 96 on LoCoMo conversations 1-5 (turn R_any@5 0.750 -> 0.775).", range=(0, 8192)),
    Setting("chunk_speaker", True, bool,
            "Start each dense chunk of a conversation turn with '<speaker>: ' (source.speaker), so a piece cut from "
            "a turn still says who spoke (with 32-token turn chunks, turn R_any@5 0.775 -> 0.787 on LoCoMo 1-5)."),
    Setting("query_runtime", "auto", str,
            "Query encoder of long-lived processes (plur serve) on the CPU: onnx (ONNX Runtime, extra 'onnx'; "
            "exported once to ~/.cache/plur/onnx/ or <cache_dir>/onnx/), torchscript (traced and frozen, 0.4-0.6 s each start), auto "
            "(onnx, else torchscript) or eager. Each is used only when its vectors equal the eager model's on "
            "probes; see docs: The local service.", ("auto", "onnx", "torchscript", "eager")),
    Setting("embed_runtime", "auto", str,
            "Document and query encoder on a CPU-only machine: auto (ONNX Runtime from a bundle exported once to "
            "~/.cache/plur/onnx/ or <cache_dir>/onnx/ with extra 'onnx', used only when its vectors equal the model's "
            "on probes; then torch is never loaded for cached work) or torch (sentence-transformers).",
            ("auto", "torch")),
    Setting("embed_precision", "float32", str,
            "float32 (the model's own vectors) or int8: documents and queries through a per-token int8 copy of the "
            "ONNX bundle (needs embed_runtime = auto, extra 'onnx', the CPU): documents 1.17-1.31x the float32 "
            "bundle's tokens/s on 2 AVX2 cores, cosine to float32 0.998 mean; LoCoMo turn hybrid within 0.004 of "
            "float32 (docs: Embedding models, 'int8 embeddings'). Its vectors are a space of their own: "
            "switching re-embeds every engram. When int8 cannot serve, float32 does, with a warning.",
            ("float32", "int8")),
    Setting("recall_embed_batch", 32, int,
            "A recall embeds at most this many new or changed engrams itself; a longer queue, or other "
            "processes' writes met again within 2 s (a stream), is embedded by a background thread while "
            "recalls answer from the last consistent index (BM25 finds the queued engrams), so a recall never "
            "waits on a stream of writers.", range=(0, 100000)),
    Setting("fsync", True, bool,
            "fsync each engram file and its folder on write (crash safety); off only for throwaway stores (benchmarks)."),
    Setting("budget_tokens", 2000, int, "Token budget of the memory block injected into the system prompt.", range=(0, 1000000)),
    Setting("recall_k", 12, int, "Engrams recalled per turn by the recall worker.", range=(0, 10000)),
    Setting("relevance_floor", "auto", str,
            "Hits scoring below this hybrid score stay out of the memory block and do not count as recalled in the "
            "statistics: auto (the floor chosen by the benchmark for the embedding model, docs: Recall, 'Relevance floor'), "
            "off, or a number from 0 to 1."),
    Setting("newest_first", True, bool,
            "When recalled notes state one fact at different times ('I work at Google', later 'I've started at "
            "Anthropic now'), the newer comes first and the memory block marks the older 'earlier than <id>'; no note "
            "is dropped (docs: Recall, 'Newest first')."),
    Setting("turn_wait_s", 1.5, float,
            "In-process hosts (plur.hosts): the longest wait, in seconds, of a turn's first model request for the "
            "recall of the message it answers, so that request carries its memory (as the DSH plugin's waitMs); "
            "later requests of the turn never wait. 0 = never wait (the block then reflects the previous turn).",
            range=(0, 600)),
    Setting("recall_timeout_s", 5.0, float,
            "How long RecallWorker.warm waits for a recall, in seconds; a slower recall is still published (counted in the worker's timeouts).", range=(0.001, 3600)),
    Setting("refresh_interval_s", 1.0, float,
            "A long-lived Memory stats every engram file this often, in seconds, to catch hand edits (stretched to 50x the scan cost on big stores; 0 = every call); "
            "other plur processes' writes are seen at the next recall regardless (writer journal), files added or removed by hand too "
            "(name listing; while other processes keep writing, within about a second: the listing runs on a thread of its own).", range=(0, 86400)),
    Setting("record_stats", True, bool, "Record recall and injection events in <home>/stats.db."),
    Setting("capture", "user", str,
            "What memory keeps from conversations by itself, at every host (the Claude Code hook, the DSH plugin, "
            "the Python worker, POST /api/v1/capture): user = each user turn becomes a note of type user; all = "
            "the assistant's turns too, as reference notes; off = nothing. Turns pass the secret screen first "
            "(keys and tokens are redacted and counted); trivial turns ('ok', a bare command) are not kept; "
            "plur forget --session S removes a conversation.", choices=("user", "all", "off")),
    Setting("keep_identity_numbers", False, bool,
            "Keep national identity numbers (US SSN, UK NINO, Spanish DNI, Chinese resident id... see docs/security.md) "
            "in what memory stores instead of redacting them; payment card numbers, keys and passwords are redacted "
            "regardless, and logs and the recall log always redact identity numbers."),
    Setting("forget_requests", True, bool,
            "A captured user turn that asks to forget something ('please forget my SSN', 'delete what I told you "
            "about Alex', 'don't keep my address'; eight languages) is not stored: the notes it points to (this "
            "conversation's, then the project's, then global ones) are forgotten as plur forget does, and the next "
            "block says so in one line (ids only). plur ingest of a conversation never stores such a turn either, and "
            "forgets what it points to within that conversation only. off = such a turn is captured like any other. "
            "docs: concepts/forgetting.md."),
    Setting("route_personal", True, bool,
            "A captured user turn about the user (family, health, identity, preferences, habits) said in a "
            "project goes to the scope global, recalled in every project; a note about the code stays in its "
            "project. The model's learn tools (MCP learn, DSH plur_learn) route the same way unless they say "
            "about='user' or 'project'; plur ingest routes a conversation's turns the same way. off = captured and "
            "ingested turns stay in the conversation's project. "
            "docs: concepts/scopes.md."),
    Setting("capture_rules", True, bool,
            "What capture and plur ingest leave out of a conversation: turns that only ask (a question is never "
            "a note), turns with nothing to remember ('ok', slash and shell commands), turns typed while capture "
            "was off (<home>/capture-off.jsonl) and a text the scope already holds from another conversation. "
            "false = every turn is kept (the secret screen still applies)."),
    Setting("store", "", str,
            "Where engrams live: '' = the YAML folder <home>/engrams; 'postgresql://user@host/db' = a PostgreSQL "
            "database with pgvector shared by several machines or a team (extra 'postgres'; docs: 'PostgreSQL and "
            "teams'). Indexes, caches and stats.db stay in <home> on each machine."),
    Setting("feed_retention_days", 30.0, float,
            "PostgreSQL store: change-feed rows every home has applied are pruned, and rows older than this many "
            "days whatever the homes say; a home off for longer rebuilds its derived copies from the database "
            "(full resync) when it comes back. docs: 'PostgreSQL and teams'.", range=(0.0, 36500)),
    Setting("autostart_service", True, bool,
            "When no service runs, `plur recall`/`section`, `plur mcp` and `plur hook` start one in the background "
            "(like Gradle's daemon) and answer the current call with keyword (BM25) recall; off = they work in-process."),
    Setting("service_idle_exit_s", 10800.0, float,
            "An auto-started service exits after this many seconds without a request (0 = never; a service started "
            "with `plur service start` or `plur serve` never exits on its own).", range=(0, 31536000)),
)

_BY_NAME = {s.name: s for s in SETTINGS}
#: Largest ``config.toml`` read, bytes (every setting at its longest is under 4 KiB; a bigger file is not a config).
MAX_CONFIG_BYTES = 64 * 1024


def settings_markdown() -> str:
    """The settings reference table of the docs (name, environment variable, default, range, meaning), from
    :data:`SETTINGS`; ``scripts/docs_hooks.py`` puts it in ``docs/reference/settings.md`` at every build."""
    rows = ["| name | environment | default | range | meaning |", "|---|---|---|---|---|"]
    rows += [f"| `{s.name}` | `PLUR_{s.name.upper()}` | `{s.default!r}` | {_range_text(s)} | {_cell(s.help)} |"
             for s in SETTINGS]
    return "\n".join(rows)


def _cell(text: str) -> str:
    """Help text as a Markdown table cell: ``|`` escaped, and ``<home>`` shown, not taken for an HTML tag."""
    return text.replace("|", "\\|").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _range_text(s: Setting) -> str:
    if s.range is not None:
        return f"{_num(s.range[0])}..{_num(s.range[1])}"
    if s.choices:
        return " / ".join(s.choices)
    return "-"


def default_home() -> Path:
    """Return ``$PLUR_HOME`` or ``~/.plur`` (not created)."""
    env = os.environ.get("PLUR_HOME")
    return Path(env).expanduser() if env else Path.home() / ".plur"


@dataclass(frozen=True)
class Settings:
    """All of plur's settings; see :data:`SETTINGS` for meaning and units."""

    home: Path
    model: str = "BAAI/bge-small-en-v1.5"
    device: str = "auto"
    cache_dir: str = ""
    embed_batch_size: int = 16
    allow_fallback: bool = True
    bm25_k1: float = 1.5
    bm25_b: float = 0.75
    stemming: bool = True
    fusion: str = "weighted"
    rrf_k: int = 60
    dense_weight: float = 0.6
    candidates: int = 100
    context_window: int = 2
    context_own_weight: int = 2
    index_dates: bool = True
    date_boost: float = 0.5
    date_mentions: bool = True
    reranker: str = ""
    rerank_top_n: int = 30
    hnsw_m: int = 16
    hnsw_quantisation: str = "b1"
    hnsw_ef_construction: int = 96
    hnsw_ef_search: int = 128
    index_threads: int = 0
    exact_threshold: int = 20000
    max_statement_bytes: int = 1048576
    max_input_bytes: int = 268435456
    embed_chunk_tokens: int = 96
    max_embed_chunks: int = 40
    turn_chunk_tokens: int = 32
    chunk_speaker: bool = True
    query_runtime: str = "auto"
    embed_runtime: str = "auto"
    embed_precision: str = "float32"
    recall_embed_batch: int = 32
    fsync: bool = True
    budget_tokens: int = 2000
    recall_k: int = 12
    relevance_floor: str = "auto"
    newest_first: bool = True
    turn_wait_s: float = 1.5
    recall_timeout_s: float = 5.0
    refresh_interval_s: float = 1.0
    record_stats: bool = True
    capture: str = "user"
    keep_identity_numbers: bool = False
    forget_requests: bool = True
    route_personal: bool = True
    capture_rules: bool = True
    store: str = ""
    feed_retention_days: float = 30.0
    autostart_service: bool = True
    service_idle_exit_s: float = 10800.0

    def replace(self, **changes: Any) -> "Settings":
        """Return a copy with ``changes`` applied and validated."""
        return _build(dataclasses.asdict(self) | {k: v for k, v in changes.items()}, source="argument")


def _coerce(name: str, value: Any, source: str) -> Any:
    """``value`` for setting ``name`` through the one strict parser (:mod:`plur.values`), for every source."""
    spec = _BY_NAME.get(name)
    if spec is None:
        known = ", ".join(sorted(_BY_NAME))
        raise ConfigError(f"unknown setting {name!r} (from {source}); known settings: {known}")
    lo, hi = spec.range if spec.range is not None else ((0, None) if spec.type in (int, float) else (None, None))
    if name == "relevance_floor" and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = repr(float(value))   # relevance_floor = 0.3 (a TOML number), as the messages suggest
    out = parse_value(spec.type, value, "setting " + name, source=source, lo=lo, hi=hi, choices=spec.choices,
                       error=ConfigError)
    if name == "relevance_floor":
        _check_floor(out, source)
    if name == "store" and out and not out.startswith(("postgresql://", "postgres://")):
        raise ConfigError(f"setting store={out!r} (from {source}) is not a PostgreSQL URI: use '' for the "
                          "engram folder or postgresql://user@host/dbname")
    return out


def _check_floor(value: str, source: str) -> None:
    """``relevance_floor`` is ``auto``, ``off`` or a number in [0, 1] (:func:`plur.index.floor.parse_setting`)."""
    text = value.strip().lower()
    if text in ("auto", "off"):
        return
    try:
        ok = 0.0 <= float(text) <= 1.0
    except ValueError:
        ok = False
    if not ok:
        raise ConfigError(f"setting relevance_floor={value!r} (from {source}) must be auto, off or a number "
                          "from 0 to 1 (a hybrid score), e.g. relevance_floor = 0.3")


def _build(values: dict[str, Any], source: str) -> Settings:
    home = Path(values.pop("home")).expanduser()
    clean = {k: _coerce(k, v, source) for k, v in values.items()}
    return Settings(home=home, **clean)


def load_settings(home: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """Resolve settings: defaults < ``<home>/config.toml`` < ``PLUR_*`` env < ``overrides``.

    Args:
        home: plur home folder; default ``$PLUR_HOME`` or ``~/.plur``.
        **overrides: setting name -> value; ``None`` values are ignored.

    Returns:
        A frozen, validated :class:`Settings`.

    Raises:
        ConfigError: an unknown setting, a value of the wrong type, or an unreadable config.toml.
    """
    return _resolve(home, overrides, None)


def load_settings_reporting(home: str | os.PathLike[str] | None = None) -> tuple[Settings, list[str]]:
    """What ``plur doctor`` runs on: :func:`load_settings`, but every value (or config.toml) that fails
    validation is reported instead of raised, and the lower source's value (in the end the default) is kept.

    Returns:
        ``(settings, problems)``: ``problems`` holds the :class:`ConfigError` messages, in the order met
        (empty when :func:`load_settings` would succeed).
    """
    problems: list[str] = []
    return _resolve(home, {}, problems), problems


def _resolve(home: str | os.PathLike[str] | None, overrides: dict[str, Any], problems: list[str] | None) -> Settings:
    """:func:`load_settings`; with a ``problems`` list, a failing value is appended there and skipped."""
    def take(name: str, value: Any, source: str) -> None:
        try:
            values[name] = _coerce(name, value, source)
        except ConfigError as exc:
            if problems is None:
                raise
            problems.append(str(exc))

    check_home(home, error=ConfigError)  # Path("") would be the current directory
    home_path = Path(home).expanduser() if home is not None else default_home()
    values: dict[str, Any] = {s.name: s.default for s in SETTINGS}
    try:
        data = _read_config(home_path / "config.toml")
    except ConfigError as exc:
        if problems is None:
            raise
        problems.append(str(exc))
        data = {}
    for k, v in data.items():
        take(k, v, str(home_path / "config.toml"))
    for spec in SETTINGS:
        env = os.environ.get("PLUR_" + spec.name.upper())
        if env is not None and env != "":
            take(spec.name, env, "PLUR_" + spec.name.upper())
    for k, v in overrides.items():
        if v is not None:
            take(k, v, "argument")
    values["home"] = home_path
    return _build(values, source="resolved")


def _read_config(cfg: Path) -> dict[str, Any]:
    """The parsed ``config.toml`` (``{}`` when there is none).

    Raises:
        ConfigError: unreadable, over :data:`MAX_CONFIG_BYTES`, or not TOML (the message names the file and the fix).
    """
    if not cfg.is_file():
        return {}
    try:
        with open(cfg, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read {cfg} ({exc.strerror or exc}); fix its permissions or delete it") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{cfg} is over {MAX_CONFIG_BYTES} bytes, too large (a plur config is a few lines of "
                          "'name = value'); fix or delete the file")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ConfigError(f"{cfg} is not valid TOML ({exc}); fix or delete the file") from None
