"""The one YAML reader of plur: safe types only, bounded size, bounded alias expansion.

Every YAML plur reads (engram files, PLUR ``engrams.yaml`` imports, Claude-folder frontmatter,
quarantine ``.reason`` files, the lock owner record) goes through :func:`load_yaml`, so one
hostile file cannot take seconds or gigabytes to read:

* the text is refused above ``max_bytes`` before it is parsed;
* aliases (``*name``) are refused beyond ``max_aliases`` (plur itself never writes one);
* the nodes aliases stand for -- the document's *expanded* size (nodes counted as if every alias
  were copied out, the measure of a "billion laughs" alias bomb) minus its distinct nodes -- are
  refused above ``max_alias_nodes``. A document without aliases is never refused by this rule.

The node graph PyYAML composes shares aliased nodes, so the expanded size is counted once per
node with memoisation (O(nodes)), before any Python object is constructed.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..errors import ValidationError

#: Default cap on the text of one YAML document, in UTF-8 bytes (64 MiB).
MAX_YAML_BYTES = 64 << 20
#: Default cap on alias uses in one document.
MAX_ALIASES = 100
#: Default cap on the nodes that aliases add when expanded, in one document.
MAX_ALIAS_NODES = 10_000


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts alias events while composing."""

    max_aliases = MAX_ALIASES

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.alias_count = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: D401 - PyYAML hook
        if self.check_event(yaml.AliasEvent):
            self.alias_count += 1
            if self.alias_count > self.max_aliases:
                mark = self.peek_event().start_mark
                raise ValidationError(
                    f"YAML uses more than {self.max_aliases} aliases (line {mark.line + 1}); plur refuses "
                    "alias-heavy YAML (a possible alias bomb): write the values out instead")
        return super().compose_node(parent, index)


class _TextLoader(_BoundedLoader):
    """As :class:`_BoundedLoader`, with timestamps left as text (engram files parse them themselves)."""


_TextLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in _TextLoader.yaml_implicit_resolvers.copy().items()
}


def _expanded_size(root: yaml.Node, limit: int) -> tuple[int, int]:
    """(expanded, distinct) node counts under ``root``, an alias counted as a full copy; stops past ``limit``."""
    memo: dict[int, int] = {}
    open_: set[int] = set()
    # iterative post-order walk (deep nesting must not hit Python's recursion limit)
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if key in memo:
            continue
        if isinstance(node, yaml.ScalarNode):
            memo[key] = 1
            continue
        children: list[yaml.Node]
        if isinstance(node, yaml.MappingNode):
            children = [c for pair in node.value for c in pair]
        else:
            children = list(node.value)
        if done:
            open_.discard(key)
            total = 1 + sum(memo.get(id(c), 0) for c in children)
            memo[key] = total
            if total > limit:
                return total, len(memo)
            continue
        memo_pending = [c for c in children if id(c) not in memo]
        if not memo_pending:
            total = 1 + sum(memo[id(c)] for c in children)
            memo[key] = total
            if total > limit:
                return total, len(memo)
            continue
        if key in open_:
            raise ValidationError("YAML holds a recursive alias (a node that contains itself); refused")
        open_.add(key)
        stack.append((node, True))
        for c in memo_pending:
            if id(c) in open_:
                raise ValidationError("YAML holds a recursive alias (a node that contains itself); refused")
            stack.append((c, False))
    return memo[id(root)], len(memo)


def load_yaml(text: str | bytes, *, what: str = "YAML", max_bytes: int = MAX_YAML_BYTES,
              max_aliases: int = MAX_ALIASES, max_alias_nodes: int = MAX_ALIAS_NODES, timestamps: bool = True) -> Any:
    """Parse one YAML document with safe types only, within the bounds of the module docstring.

    Args:
        text: the document (``bytes`` are decoded as UTF-8).
        what: what the text is, for messages (e.g. a file path).
        max_bytes: refuse texts longer than this many UTF-8 bytes.
        max_aliases: refuse more alias uses than this.
        max_alias_nodes: refuse documents whose aliases stand for more nodes than this, in total.
        timestamps: resolve unquoted timestamps to ``datetime`` (PyYAML's default); ``False`` keeps them text.

    Returns:
        The Python value (``None`` for an empty document).

    Raises:
        ValidationError: too large, too many aliases, an alias bomb, more than one document, or
            not valid YAML; the message names ``what`` and the bound.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"{what}: not UTF-8 text ({exc}); re-save it as UTF-8") from None
    size = len(text) if len(text) * 4 <= max_bytes else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise ValidationError(f"{what}: YAML document is {size} bytes, over plur's limit of {max_bytes} bytes")
    loader_cls = _BoundedLoader if timestamps else _TextLoader
    loader = loader_cls(text)
    loader.max_aliases = max_aliases
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if loader.alias_count:
            distinct = _expanded_size(node, 1 << 62)[1]
            expanded, _ = _expanded_size(node, distinct + max_alias_nodes)
            if expanded - distinct > max_alias_nodes:
                raise ValidationError(f"{what}: YAML aliases expand to more than {max_alias_nodes} extra nodes "
                                      "(an alias bomb); refused: write the values out instead")
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise ValidationError(f"{what}: not valid YAML ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise ValidationError(f"{what}: YAML nested too deeply; refused") from None
    finally:
        loader.dispose()


__all__ = ["MAX_ALIASES", "MAX_ALIAS_NODES", "MAX_YAML_BYTES", "load_yaml"]
