"""What builds a candidate and runs it, giving rounds: one module per kind of program.

    base.py            the ProgramRunner interface: every method says what an implementation must do
    source_file.py     the whole program of one source file, built by the backend (`optimize prog.cu`)
    project_tree.py    the whole program of a project's tree, built and run by its own commands
                       (`optimize --project DIR --build CMD --run CMD`)

The loop's stages know only the interface (optimize/run_context.py picks the implementation), so
that a program which is not the whole application (a replayed kernel) is one more module here.
"""

from rocm_perf.optimize.runners.base import BuiltCandidate, ProgramRunner

__all__ = ["BuiltCandidate", "ProgramRunner"]
