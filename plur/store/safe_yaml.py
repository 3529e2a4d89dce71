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


#: libyaml's parser and composer (PyYAML built with libyaml), else PyYAML's pure-Python ones. The C
#: composer is ~10x faster on an engram file (a reader catching up with other processes' writes
#: parses every new file) and caps nesting depth itself (libyaml: "exceeded maximum nesting depth").
_BASE: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BASE):  # type: ignore[misc, valid-type]
    """Safe types only; aliases are counted in the composed node graph (:func:`_alias_uses`)."""


class _TextLoader(_Loader):
    """As :class:`_Loader`, with timestamps left as text (engram files parse them themselves)."""


_TextLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in _Loader.yaml_implicit_resolvers.copy().items()
}


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.ScalarNode):
        return []
    if isinstance(node, yaml.MappingNode):
        return [c for pair in node.value for c in pair]
    return list(node.value)


def _alias_uses(root: yaml.Node) -> tuple[int, yaml.Node | None]:
    """(alias uses, the first node used through an alias) in the graph under ``root``.

    The composer makes a new node for every value written out and shares the anchored node for each
    ``*alias``, so every reference to a node already reached is one alias use, whatever the walk's
    order (references minus distinct nodes). Iterative: deep nesting cannot hit the recursion limit.
    """
    seen = {id(root)}
    stack = [root]
    uses, first = 0, None
    while stack:
        for child in _children(stack.pop()):
            if id(child) in seen:
                uses += 1
                first = first or child
            else:
                seen.add(id(child))
                stack.append(child)
    return uses, first


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
        children = _children(node)
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
        raise ValidationError(f"{what}: YAML document is {size} bytes, too large: over plur's limit of {max_bytes} bytes")
    loader = (_Loader if timestamps else _TextLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        uses, first = _alias_uses(node)
        if uses > max_aliases:
            line = first.start_mark.line + 1 if first is not None else 0
            raise ValidationError(
                f"{what}: YAML uses {uses} aliases, more than {max_aliases} (the node of line {line}, among "
                "others); plur refuses alias-heavy YAML (a possible alias bomb): write the values out instead")
        if uses:
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
