"""A Griffe extension of plur's documentation site (``mkdocs.yml``: the python handler's ``extensions``): the
Sphinx roles of plur's docstrings rendered as links.

plur's docstrings name other objects with Sphinx roles (``:class:`~plur.config.Settings```, ``:meth:`learn```),
which IDEs and Sphinx read; mkdocstrings renders docstrings as Markdown, where a role is raw text
(``:class:~plur.config.Settings``). Before a docstring is parsed, each role becomes an optional cross-reference
of mkdocs-autorefs: a link to the object where the site documents it, its name in code font otherwise (never
a warning, never the raw role). ``~`` keeps the last name only, as in Sphinx.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

#: ``:class:`~a.b.C```, ``:py:meth:`a.B.f```, ``:func:`f(x)``` ...
ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const|type):`(?P<tilde>~?)(?P<target>[^`]+)`")


def render_role(match: re.Match[str]) -> str:
    """One role as ``<autoref identifier=... optional><code>title</code></autoref>``."""
    target = match["target"].strip()
    identifier = target.split("(", 1)[0].strip().lstrip(".!")
    title = target.lstrip(".!")
    if match["tilde"]:
        title = title.split("(", 1)[0].rsplit(".", 1)[-1] + ("(" + target.split("(", 1)[1] if "(" in target else "")
    return (f'<autoref identifier="{html.escape(identifier, quote=True)}" optional>'
            f"<code>{html.escape(title, quote=False)}</code></autoref>")


def convert(text: str) -> str:
    """``text`` with every Sphinx role rendered (see the module doc)."""
    return ROLE.sub(render_role, text)


class SphinxRoles(griffe.Extension):
    """Rewrites the docstring of every object Griffe loads (see the module doc)."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:  # noqa: ARG002 - Griffe's hook
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = convert(obj.docstring.value)
