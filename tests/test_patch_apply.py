"""Unified diffs as git and diff -u write them (the real tools make them here), applied to the
programs of kernels/ and tests/data/programs: where they apply, where they do not (the hunk and
the line said), and the patches that are refused with one line."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rocm_perf.errors import RocmPerfError
from rocm_perf.source.patch_apply import apply_patch, parse_patch, patch_targets
from conftest import DATA, KERNELS

HISTOGRAM = KERNELS / "histogram.cu"
LAUNCHES = b"constexpr int kLaunches = 10;"


def changed(data: bytes) -> bytes:
    """histogram.cu with two edits far apart (two hunks): a kernel's body and a host constant."""
    out = data.replace(b"atomicAdd(&bins[keys[i] % num_bins], 1u);", b"atomicAdd(&bins[keys[i] % num_bins], 1u);  // hot")
    return out.replace(b'std::printf("checksum %llu\\n", checksum);', b'std::printf("checksum %llu\\n", checksum);\n    // done')


def real_diff(tmp_path: Path, before: bytes, after: bytes, tool: str) -> bytes:
    """The diff the real tool writes: `git diff` of prog.cu changed in a repository, or
    `diff -u prog.cu prog_new.cu`."""
    work = tmp_path / f"work-{tool}"
    work.mkdir(exist_ok=True)
    (work / "prog.cu").write_bytes(before)
    if tool == "git":
        if shutil.which("git") is None:
            pytest.skip("git not installed")
        git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "core.autocrlf=false"]
        for argv in (["init", "-q"], ["add", "prog.cu"], ["commit", "-qm", "x"]):
            subprocess.run(git + argv, cwd=work, check=True, capture_output=True)
        (work / "prog.cu").write_bytes(after)
        return subprocess.run(git + ["diff"], cwd=work, capture_output=True, check=True).stdout
    (work / "prog_new.cu").write_bytes(after)
    return subprocess.run(["diff", "-u", "prog.cu", "prog_new.cu"], cwd=work, capture_output=True).stdout


@pytest.mark.parametrize("tool", ["git", "diff"])
def test_a_real_tools_diff_applies_to_the_file_it_was_made_from(tmp_path, tool):
    before = HISTOGRAM.read_bytes()
    patch = parse_patch(real_diff(tmp_path, before, changed(before), tool), "change.diff")
    assert "prog.cu" in patch.names and len(patch.hunks) == 2  # git's a/ b/ prefixes dropped
    assert apply_patch(patch, before, "prog.cu") == changed(before)
    assert patch_targets(patch, tmp_path / "src" / "prog.cu") == ""  # paths relative to the source's folder
    assert patch_targets(patch, tmp_path / "kernels" / "prog.cu") == ""


def test_a_hunk_moved_by_lines_added_above_it_still_applies_and_line_endings_are_the_files(tmp_path):
    before = HISTOGRAM.read_bytes()
    patch = parse_patch(real_diff(tmp_path, before, changed(before), "diff"), "change.diff")
    grown = b"// a line\n// another\n" + before
    assert apply_patch(patch, grown, "prog.cu") == b"// a line\n// another\n" + changed(before)
    crlf = before.replace(b"\n", b"\r\n")  # the file written on Windows, the diff on Linux
    assert apply_patch(patch, crlf, "prog.cu") == changed(before).replace(b"\n", b"\r\n")


def test_a_last_line_without_a_newline_is_kept_so(tmp_path):
    before = (DATA / "programs" / "two_loops.cu").read_bytes().rstrip(b"\n")
    after = before.replace(b"return 0;", b"return 0;  // ok")
    patch = parse_patch(real_diff(tmp_path, before, after, "diff"), "eof.diff")
    assert apply_patch(patch, before, "prog.cu") == after


def test_a_patch_that_does_not_apply_names_its_hunk_and_the_line(tmp_path):
    before = HISTOGRAM.read_bytes()
    text = real_diff(tmp_path, before, before.replace(LAUNCHES, b"constexpr int kLaunches = 20;"), "diff")
    edited = before.replace(LAUNCHES, b"constexpr int kLaunches = 12;")  # the user's file moved on
    with pytest.raises(RocmPerfError) as e:
        apply_patch(parse_patch(text, "launches.diff"), edited, "histogram.cu")
    message = str(e.value)
    assert message.startswith("launches.diff: hunk 1 (@@ -23,") and "does not apply to histogram.cu at line 23" in message
    assert "line 26 is `constexpr int kLaunches = 12;`, the hunk expects `constexpr int kLaunches = 10;`" in message


@pytest.mark.parametrize("text, words", [
    (b"", "empty patch"),
    (b"  \n\n", "empty patch"),
    (b"just some words\nabout a change\n", "not a unified diff"),
    (b"diff --git a/x.cu b/x.cu\nindex 1..2 100644\nBinary files a/x.cu and b/x.cu differ\n", "a binary patch"),
    (b"diff --git a/x.cu b/x.cu\nGIT binary patch\nliteral 5\nHcmV?d00001\n", "a binary patch"),
    (b"--- /dev/null\n+++ b/new.cu\n@@ -0,0 +1 @@\n+int x;\n", "creates a file"),
    (b"--- a/x.cu\n+++ b/x.cu\n", "empty patch (no hunks)"),
    (b"--- a/x.cu\n+++ b/x.cu\n@@ -1,3 +1,3 @@\n a\n-b\n", "is cut short"),
    (b"--- a/x.cu\n+++ b/x.cu\n@@ -1 +1 @@\n-a\n+b\n--- a/y.cu\n+++ b/y.cu\n@@ -1 +1 @@\n-a\n+b\n", "changes 2 files"),
])
def test_bad_patches_are_refused_with_one_line(text, words):
    with pytest.raises(RocmPerfError) as e:
        parse_patch(text, "bad.diff")
    assert str(e.value).startswith("bad.diff: ") and words in str(e.value) and "\n" not in str(e.value)


def test_a_patch_for_another_file_is_refused(tmp_path):
    before = HISTOGRAM.read_bytes()
    patch = parse_patch(real_diff(tmp_path, before, changed(before), "git"), "change.diff")
    with pytest.raises(RocmPerfError, match=r"change.diff: a patch for another file \(prog.cu\); the source is histogram.cu"):
        patch_targets(patch, HISTOGRAM)


def test_in_a_project_the_patch_names_one_of_its_sources(tmp_path):
    tree = tmp_path / "proj"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "prog.cu").write_bytes(b"x\n")
    (tree / "src" / "util.h").write_bytes(b"y\n")
    patch = parse_patch(b"--- a/src/prog.cu\n+++ b/src/prog.cu\n@@ -1 +1 @@\n-x\n+z\n", "p.diff")
    assert patch_targets(patch, tree, tree=tree, candidates=["src/prog.cu"]) == "src/prog.cu"
    header = parse_patch(b"--- a/src/util.h\n+++ b/src/util.h\n@@ -1 +1 @@\n-y\n+z\n", "h.diff")
    with pytest.raises(RocmPerfError, match="not one of the project's sources .* --source src/util.h"):
        patch_targets(header, tree, tree=tree, candidates=["src/prog.cu"])
