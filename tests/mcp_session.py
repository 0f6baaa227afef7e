"""The real MCP client (`mcp.ClientSession` over `mcp.client.stdio.stdio_client`) driving a
`rocm-perf mcp` it spawns, for the tests of the server (test_mcp_*.py).

`with_server(cwd, args, script)` runs `await script(session)` against a server started in `cwd`
with `rocm-perf mcp ARGS`, its stderr kept in cwd/mcp-server.log; the server is shut down the way
a client shuts it down (stdin closed) when the script returns.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

ROCM_PERF = Path(sys.executable).parent / "rocm-perf"  # the console script of this environment


@asynccontextmanager
async def session(cwd: Path, args: list[str]):
    params = StdioServerParameters(command=str(ROCM_PERF), args=["mcp", *args], cwd=str(cwd), env=dict(os.environ))
    with open(cwd / "mcp-server.log", "a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


def with_server(cwd: Path, args: list[str], script: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    """Run `script(session)` against a fresh server; its return value."""
    async def main():
        async with session(cwd, args) as s:
            return await script(s)

    return anyio.run(main)


def text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def data(result) -> dict:
    """A successful call's structured result (and its text is the same JSON)."""
    assert not result.is_error, text(result)
    assert json.loads(text(result)) == result.structured_content
    return result.structured_content
