"""``python -m lancelet``: the command-line tool (see ``lancelet.cli``)."""

import sys

from lancelet.cli import main

sys.exit(main())
