"""``python -m plur``: the same as the ``plur`` command."""

import sys

from .cli import main

sys.exit(main())
