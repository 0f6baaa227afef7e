"""The options of `rocm-perf optimize` (filled in by the closed-loop work)."""

import argparse


def add_optimize_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", nargs="?", help="the .cu file to optimize (never written)")
    p.add_argument("program_args", nargs="*", help="arguments for the program (after --)")
