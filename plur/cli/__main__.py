"""``python -m plur.cli``: the same as the ``plur`` command."""

import sys

from . import main

sys.exit(main())
