"""The one exception type for errors a user can meet.

The CLI prints its message as a single line and exits non-zero; `--debug` shows the traceback.
Messages say what happened and, where it helps, what to do: name the file and the problem.
"""


class RocmPerfError(Exception):
    """A user-facing error: bad input, a missing tool, a program that does not build."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
