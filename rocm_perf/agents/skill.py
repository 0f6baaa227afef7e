"""The agent skill shipped in the package: SKILL.md (frontmatter `name` and `description`, then
the playbook), printed by `rocm-perf skill show` and installed by `rocm-perf skill install`.

Agent skills are a folder holding SKILL.md whose YAML frontmatter has `name` (lowercase letters,
digits and hyphens, at most 64 characters) and `description` (what it does and when to use it, at
most 1024 characters); Claude Code reads personal skills from ~/.claude/skills/<name>/SKILL.md
(docs.claude.com/docs/claude-code/skills), hence the default folder.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError

SKILL_NAME = "rocm-perf"
DEFAULT_DIR = Path("~/.claude/skills") / SKILL_NAME


def skill_text() -> str:
    """SKILL.md as the package ships it."""
    return resources.files("rocm_perf.agents").joinpath("SKILL.md").read_text(encoding="utf-8")


def frontmatter(text: str) -> dict[str, str]:
    """The `key: value` lines between the leading `---` lines (RocmPerfError when there are none)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---" or "---" not in (l.strip() for l in lines[1:]):
        raise RocmPerfError("SKILL.md: no frontmatter (a block between --- lines) at its top")
    end = next(i for i, l in enumerate(lines[1:], start=1) if l.strip() == "---")
    fields = {}
    for line in lines[1:end]:
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def install_skill(folder: Path | None = None) -> Path:
    """Write SKILL.md into `folder` (default ~/.claude/skills/rocm-perf/); the path written. A
    different SKILL.md already there (an older version, or edited by hand) is kept as SKILL.md.bak."""
    folder = (folder or DEFAULT_DIR).expanduser()
    target = folder / "SKILL.md"
    text = skill_text()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if target.exists() and target.read_text(encoding="utf-8", errors="replace") != text:
            write_atomic(folder / "SKILL.md.bak", target.read_bytes())
        write_atomic(target, text)
    except OSError as e:
        raise RocmPerfError(f"{target}: cannot write the skill ({e.strerror or e})") from e
    return target


def run_skill(action: str, folder: Path | None = None) -> int:
    """`rocm-perf skill show` prints SKILL.md; `skill install [--dir DIR]` writes it and says where."""
    if action == "show":
        print(skill_text(), end="")
        return 0
    print(f"wrote {install_skill(folder)}")
    return 0
