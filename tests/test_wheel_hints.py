"""The hints an error gives fit the installation it comes from (issue 48): a wheel has no checkout to
``pip install -e`` and no ``scripts/`` folder, so its hints name the extra's requirements and
``python -m plur.embed.fetch``."""

from __future__ import annotations

import subprocess
import sys

import pytest

import plur.errors as errors


def test_an_install_hint_from_a_wheel_names_the_extras_requirements(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wheel said `pip install -e '<your plur checkout>[mcp]'`."""
    assert "-e '" in errors.install_hint("mcp")                        # this checkout: the editable install
    monkeypatch.setattr(errors, "_checkout", lambda: None)               # as installed from the wheel
    hint = errors.install_hint("mcp")
    assert hint.startswith(f"{sys.executable} -m pip install 'mcp") and "checkout" not in hint and " -e " not in hint


def test_model_hints_name_the_packaged_fetch_module(tmp_path) -> None:  # noqa: ANN001
    """The fallback and the download errors pointed a wheel's user at `python scripts/fetch_models.py`."""
    from plur.config import load_settings
    from plur.embed.resolve import resolve_embedder

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = resolve_embedder(load_settings(tmp_path, model="BAAI/bge-small-en-v1.5", allow_fallback=True),
                               download=False)
    said = " ".join(res.warnings)
    assert "-m plur.embed.fetch download BAAI/bge-small-en-v1.5" in said and "scripts/" not in said, said
    out = subprocess.run([sys.executable, "-m", "plur.embed.fetch", "list"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "sentence-transformers/all-MiniLM-L6-v2" in out.stdout, out.stderr
