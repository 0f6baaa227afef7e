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


def one_line(message: str) -> str:
    """`message` as one printable line: a character that would break it or be invisible (a control
    character, a line or paragraph separator, a carriage return a damaged file put into a name the
    message quotes) is written as its escape, `\\x1e`, `\\r`, `\\u2028`."""
    if message.isprintable():
        return message
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
