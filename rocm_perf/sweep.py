"""Overnight sweeps: many targets, one time budget, resumable, and a watch mode (the daemon)."""

from __future__ import annotations

import argparse


def add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", nargs="*", help=".cu files, directories of them, or TOML manifests")
    p.add_argument("--budget", default="8h", help="total wall-clock budget, e.g. 90m, 8h, 1h30m (default: 8h)")
    p.add_argument("--per-target-budget", default=None, help="cap for any one target (default: the budget shared out)")
    p.add_argument("--resume", metavar="SWEEP", help="continue this sweep directory inside its remaining budget")
    p.add_argument("--watch", action="store_true", help="keep running: re-optimize changed sources, pick up new targets")
    p.add_argument("--out", default="runs", help="output root (default: runs/)")
