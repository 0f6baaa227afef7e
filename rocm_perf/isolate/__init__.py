"""`rocm-perf isolate`: one dispatch of a real program captured into a standalone reproducer.

    command.py     the command: check the input, build the program, capture, write the folder atomically
    capture.py     one run of the program with the host runtime's capture armed, and what it left
    extract.py     the kernel's device code out of its translation unit (libclang), line for line
    harness.py     the generated replay harness for one capture
    snapshots.py   the captured memory compressed into the reproducer, with sizes and sha256s
    harness/       what every harness includes (replay_support.h), copied into each reproducer

The folder's format and its one reader are rocm_perf/reproducer.py (every command takes a
reproducer as a program); building and running a harness is rocm_perf/backends/replay_build.py.
"""
