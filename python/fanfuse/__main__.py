"""`python -m fanfuse ...`: the command line, as the `fanfuse` script runs it (the one module
outside `fanfuse.cli` that imports it, being the same entry point)."""

import sys

from fanfuse.cli import main

if __name__ == "__main__":  # run, not imported (a scan of the package's modules imports it)
    sys.exit(main())
