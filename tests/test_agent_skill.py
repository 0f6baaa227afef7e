"""The agent skill shipped in the package (issue 55): SKILL.md has the frontmatter agents read
(`name`, `description` within their limits), names the workflow and what no one may conclude from
the host backend; `rocm-perf skill show` prints it and `skill install` writes it where asked (by
default ~/.claude/skills/rocm-perf/), keeping a different SKILL.md already there.
"""

from __future__ import annotations

import re

from rocm_perf.agents.skill import frontmatter, skill_text
from rocm_perf.cli import main


def test_the_skill_has_its_frontmatter_and_the_playbook():
    text = skill_text()
    fields = frontmatter(text)
    assert fields["name"] == "rocm-perf" and re.fullmatch(r"[a-z0-9-]{1,64}", fields["name"])
    assert 200 < len(fields["description"]) <= 1024  # the skills' limit on a description
    for words in ("doctor", "critical_path", "try_patch", "job_status", "review", "not significant", "wrong output",
                  "host backend", "not GPU times"):
        assert words in text, words


def test_skill_show_prints_it_and_install_writes_it_and_says_where(tmp_path, capsys, monkeypatch):
    assert main(["skill", "show"]) == 0
    assert capsys.readouterr().out == skill_text()
    assert main(["skill", "install", "--dir", str(tmp_path / "here")]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {tmp_path / 'here' / 'SKILL.md'}"
    assert (tmp_path / "here" / "SKILL.md").read_text() == skill_text()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home" / ".claude" / "skills" / "rocm-perf").mkdir(parents=True)
    (tmp_path / "home" / ".claude" / "skills" / "rocm-perf" / "SKILL.md").write_text("my own notes\n")
    assert main(["skill", "install"]) == 0
    folder = tmp_path / "home" / ".claude" / "skills" / "rocm-perf"
    assert (folder / "SKILL.md").read_text() == skill_text()
    assert (folder / "SKILL.md.bak").read_text() == "my own notes\n"  # nothing lost


def test_install_into_a_folder_it_cannot_write_is_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    assert main(["skill", "install", "--dir", str(tmp_path / "file" / "below")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rocm-perf: error: ") and "cannot write the skill" in err and "\n" not in err
