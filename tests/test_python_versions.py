"""rocm-perf runs on Python 3.10 through 3.13 (Ubuntu 22.04's Python, many PyTorch ROCm images),
and no machine here has a 3.10 interpreter to run the suite under: vermin reads every module and
test and fails on syntax, modules or functions newer than 3.10."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

VERMIN = "import sys; from vermin import main; sys.exit(main())"


def test_nothing_newer_than_python_3_10_is_used():
    # --exclude file: vermin takes a parameter named `file` for Python 2's builtin; --eval-annotations:
    # judge annotations as if evaluated (a `X | None` is 3.10, fine).
    done = subprocess.run([sys.executable, "-c", VERMIN, "-t=3.10-", "--no-tips", "--violations", "--exclude", "file",
                           "--eval-annotations", "rocm_perf", "tests", "setup.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_package_declares_python_3_10_and_the_toml_parser_it_needs_there():
    try:
        import tomllib  # novermin: this interpreter reads pyproject.toml either way
    except ModuleNotFoundError:
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.10"
    assert any(d.replace(" ", "").startswith("tomli") and "python_version<'3.11'" in d.replace(" ", "")
               for d in project["dependencies"])
