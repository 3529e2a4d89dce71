"""``python -m bench``: ``demo`` runs :mod:`bench.demo` (the README's main job); anything else is
:mod:`bench.cli`. Dispatching here keeps the two one-way: the demo calls the CLI, never the reverse."""

import sys

argv = sys.argv[1:]
if argv[:1] == ["demo"]:
    from .demo import main as demo_main

    sys.exit(demo_main(argv[1:]))
if argv[:1] in (["peers"], ["ingest-vs-txtai"]):  # ingest-vs-txtai: the command's name before MemPalace and recall
    from .peers.compare import main as peers_main

    sys.exit(peers_main(argv[1:]))
if argv[:1] == ["scale"]:
    from .scale.run import main as scale_main

    sys.exit(scale_main(argv[1:]))
if argv[:1] == ["capture-wait"]:
    from .doors.capture_wait import main as capture_wait_main

    sys.exit(capture_wait_main(argv[1:]))

if argv[:1] == ["newest"]:
    from .quality.newest import main as newest_main

    sys.exit(newest_main(argv[1:]))

from .cli import main

sys.exit(main(argv))
