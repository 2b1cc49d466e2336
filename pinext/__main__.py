"""``python -m pinext``: the pinext command."""

import sys

from .cli import main

sys.exit(main())
