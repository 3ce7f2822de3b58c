"""``python -m npujit <command>`` (also the ``npujit`` script): see ``npujit --help`` and
npujit/cli/."""
from __future__ import annotations

import sys

from npujit.cli import main

if __name__ == "__main__":
    sys.exit(main())
