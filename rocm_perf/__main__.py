"""`python -m rocm_perf ...` is the `rocm-perf` command (where no console script is on PATH: a
notebook's kernel, a virtualenv not activated)."""

import sys

from rocm_perf.cli import main

if __name__ == "__main__":
    sys.exit(main())
