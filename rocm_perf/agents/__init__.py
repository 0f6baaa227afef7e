"""rocm-perf for agents and serving engines: the MCP server over the package's commands
(`rocm-perf mcp`), its background jobs, the safety of the paths it is handed, the installable
agent skill (SKILL.md), and `triage --live` on a running SGLang or vLLM server.

Every tool calls the same package function its CLI command calls and returns the data that
command prints with `--json` (or writes as its artifacts); nothing here computes a figure itself.
"""
