"""Fetch and verify the embedding models pinned in models.lock (``python -m plur.embed.fetch``; in a checkout
``scripts/fetch_models.py`` is the same)::

    python -m plur.embed.fetch list
    python -m plur.embed.fetch download BAAI/bge-small-en-v1.5            # into the HF cache
    python -m plur.embed.fetch download BAAI/bge-small-en-v1.5 --to DIR   # plain files in DIR
    python -m plur.embed.fetch verify                                      # every model found on disk
    python -m plur.embed.fetch verify BAAI/bge-small-en-v1.5 --path DIR
    python -m plur.embed.fetch --update-lock download BAAI/bge-base-en-v1.5

``download`` fetches exactly the pinned files at the pinned revision (huggingface_hub), then checks
every sha256; a mismatch deletes nothing but exits 1. ``verify`` re-hashes files already on disk:
a model's packaged copy, its Hugging Face cache snapshot, or ``--path``. ``--update-lock`` writes
the computed sha256 (and size) of files whose pin is empty into models.lock; it never overwrites a
pin that disagrees (that is tampering or a wrong revision, and stays an error).

Exit codes: 0 all good, 1 a verification failed, 2 bad arguments, 3 nothing to verify / offline.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from ..errors import ModelError
from .model_files import VerifyReport, download_pinned, fetch_hint, hf_snapshot_folder, verify_files
from .models_lock import ModelSpec, default_lock_path, dump_lock, find_spec, load_lock, lock_header, lock_trailer


def _print_report(spec: ModelSpec, report: VerifyReport) -> None:
    print(f"{spec.name}@{spec.revision[:7]} in {report.folder}")
    for path in report.verified:
        print(f"  ok          {path}")
    for path, digest in report.unverified:
        print(f"  unpinned    {path}  sha256 {digest}")
    for path in report.missing:
        print(f"  MISSING     {path}")
    for path, expected, actual in report.mismatched:
        print(f"  MISMATCH    {path}  pinned {expected}  actual {actual}")
    verdict = "OK" if report.ok else "FAILED"
    print(f"  {verdict}: {len(report.verified)} verified, {len(report.unverified)} unpinned, "
          f"{len(report.missing)} missing, {len(report.mismatched)} mismatched")


def _update_lock(lock: Path, spec: ModelSpec, report: VerifyReport) -> bool:
    """Fill empty pins of ``spec`` from ``report``; return True if the file changed."""
    computed = dict(report.unverified)
    if not computed:
        return False
    files = []
    for f in spec.files:
        if not f.sha256 and f.path in computed:
            size = (report.folder / f.path).stat().st_size
            f = dataclasses.replace(f, sha256=computed[f.path], size=size)
        files.append(f)
    specs = load_lock(lock)
    specs[spec.name] = dataclasses.replace(spec, files=tuple(files))
    text = lock.read_text(encoding="utf-8")
    lock.write_text(dump_lock(specs, lock_header(text), lock_trailer(text)), encoding="utf-8")
    print(f"  models.lock: pinned {len(computed)} file(s) of {spec.name} in {lock}")
    return True


def _candidates(spec: ModelSpec, path: Path | None, cache_dir: Path | None) -> list[Path]:
    if path is not None:
        return [path]
    found = [p for p in (spec.packaged_folder(), hf_snapshot_folder(spec, cache_dir)) if p and p.is_dir()]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m plur.embed.fetch", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--lock", type=Path, default=None, help="models.lock to use (default: the one plur reads)")
    parser.add_argument("--cache-dir", type=Path, default=None, help="Hugging Face cache (default: $HF_HUB_CACHE...)")
    parser.add_argument("--update-lock", action="store_true", help="write computed sha256 of unpinned files")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list pinned models")
    p_down = sub.add_parser("download", help="download a pinned model and verify it")
    p_down.add_argument("model", help="repository id or alias from models.lock")
    p_down.add_argument("--to", type=Path, default=None, help="plain folder instead of the HF cache")
    p_ver = sub.add_parser("verify", help="re-check files on disk")
    p_ver.add_argument("model", nargs="?", help="repository id or alias (default: all)")
    p_ver.add_argument("--path", type=Path, default=None, help="model folder to check")
    args = parser.parse_args(argv)

    lock = args.lock or default_lock_path()
    try:
        specs = load_lock(lock)
    except ModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    if args.command == "list":
        for spec in specs.values():
            pinned = sum(1 for f in spec.files if f.sha256)
            where = [str(p) for p in _candidates(spec, None, args.cache_dir)]
            print(f"{spec.name}@{spec.revision[:7]}  {spec.dims}d {spec.pooling} max {spec.max_seq_length}  "
                  f"{pinned}/{len(spec.files)} files pinned  {'on disk: ' + ', '.join(where) if where else 'not on disk'}")
        return 0

    names = [args.model] if args.model else list(specs)
    chosen = []
    for name in names:
        spec = find_spec(specs, name)
        if spec is None:
            print(f"error: {name!r} is not in {lock}; pinned: {', '.join(specs)}", file=sys.stderr)
            return 2
        chosen.append(spec)

    failed = checked = 0
    for spec in chosen:
        if args.command == "download":
            try:
                folders = [download_pinned(spec, cache_dir=args.cache_dir, local_dir=args.to)]
            except ModelError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 3
        else:
            folders = _candidates(spec, args.path, args.cache_dir)
            if not folders and args.model:
                print(f"error: {spec.name} is not on disk (no packaged copy, no {hf_snapshot_folder(spec, args.cache_dir)}); "
                      f"download it: {fetch_hint('download ' + spec.name)}", file=sys.stderr)
                return 3
        for folder in folders:
            report = verify_files(spec, folder)
            _print_report(spec, report)
            checked += 1
            failed += not report.ok
            if args.update_lock and report.ok:
                _update_lock(lock, spec, report)
                specs = load_lock(lock)
                spec = specs[spec.name]
    if checked == 0:
        print("nothing to verify: no pinned model is on disk", file=sys.stderr)
        return 3
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
