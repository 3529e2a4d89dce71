"""``python -m plur``: the same as the ``plur`` command."""

import sys

from .launch import main

sys.exit(main())
