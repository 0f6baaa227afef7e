"""Rules as data, candidates, and the guards, on the hand-written edge cases."""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import pytest

from conftest import DATA, ROOT
from rocm_perf.errors import RocmPerfError
from rocm_perf.source import analyze_bytes, analyze_source, applicable_rules, guard_candidate, load_rules, make_candidate
from rocm_perf.source.commands import run_loops, run_rewrite
from rocm_perf.source.rules import parse_rule

SRC = DATA / "source"


@functools.cache
def analyzed(path: Path, flags: tuple[str, ...] = ()):
    return analyze_source(path, list(flags))


@functools.cache
def rules():
    return load_rules()


def loop_of(analysis, var=None, kind=None):
    return next(l for l in analysis.loops if (var is None or l.induction_var == var) and (kind is None or l.kind == kind))


def candidate(path, loop, rule, factor):
    return make_candidate(path, analyzed(path), loop.id, rule, factor, rules=rules())


def verdicts(cand, flags=()):
    return {v.name: v for v in guard_candidate(cand, flags)}


def assert_all_guards_pass(cand, flags=()):
    bad = [v for v in guard_candidate(cand, flags) if not v.ok]
    assert not bad, bad


# ---- rules are data --------------------------------------------------------------------------


def test_default_rules_are_the_repo_rewrites_folder():
    by_name = {r.name: r for r in rules()}
    assert by_name["unroll_pragma"].factors == [1, 2, 4, 8]
    assert by_name["unroll_manual"].factors == [2, 4, 8]
    assert all(r.path.parent == ROOT / "rewrites" for r in rules())
    assert all(r.description and r.applies for r in rules())


def test_a_new_rule_is_a_new_file(tmp_path, monkeypatch):
    (tmp_path / "clang_unroll_count.j2").write_text(
        "{#\n"
        "name: clang_unroll_count\n"
        "description: Set `#pragma clang loop unroll_count(N)`.\n"
        "applies: loops without a pragma\n"
        "when: not loop.from_macro => from a macro\n"
        "when: loop.pragma is none => already has {{ loop.pragma }}\n"
        "factors: 3, 6\n"
        "#}\n"
        "#pragma clang loop unroll_count({{ factor }})\n"
        "{{ loop.indent }}{{ loop_text }}\n"
    )
    monkeypatch.setenv("ROCM_PERF_RULES_DIR", str(tmp_path))
    loaded = load_rules()
    assert [r.name for r in loaded] == ["clang_unroll_count"]
    a = analyzed(SRC / "pragmas.cu")
    z, b = loop_of(a, "z"), loop_of(a, "b")
    assert [(r.name, f) for r, f in applicable_rules(z, loaded)] == [("clang_unroll_count", [3, 6])]
    assert applicable_rules(b, loaded) == []
    assert loaded[0].reasons_not(b) == ["already has #pragma unroll 2"]
    cand = make_candidate(SRC / "pragmas.cu", a, z.id, "clang_unroll_count", 6, rules=loaded)
    assert "+    #pragma clang loop unroll_count(6)\n" in cand.diff
    after = analyze_bytes(SRC / "pragmas.cu", cand.rewritten)
    assert loop_of(after, "z").pragma_factor == 6


@pytest.mark.parametrize(
    "text, message",
    [
        ("no header\n", "starts with a {# ... #} header"),
        ("{#\nname: x\n#}\n", "lacks description, applies, factors"),
        ("{#\nname: x\ndescription: d\napplies: a\nfactors: 2\nwhen: loop.kind ==\n#}\n", "needs `=> reason`"),
        ("{#\nname: x\ndescription: d\napplies: a\nfactors: two\n#}\n", "invalid literal"),
        ("{#\nname: x\ndescription: d\napplies: a\nfactors: 2\n#}\n{% if %}\n", "template error"),
    ],
)
def test_malformed_rules_are_named_errors(tmp_path, text, message):
    path = tmp_path / "bad.j2"
    path.write_text(text)
    with pytest.raises(RocmPerfError, match=message.replace("(", r"\(").replace("{", r"\{").replace("}", r"\}")):
        parse_rule(path)


# ---- the pragma rule ---------------------------------------------------------------------------


@pytest.mark.parametrize("var", ["a", "c", "d", "e", "g", "h", "z"])
def test_pragma_rule_replaces_every_spelling_or_inserts(var):
    path = SRC / "pragmas.cu"
    a = analyzed(path)
    loop = loop_of(a, var)
    factor = 2 if loop.pragma_factor != 2 else 4
    cand = candidate(path, loop, "unroll_pragma", factor)
    header = a.data[loop.start : loop.body_start]
    expected = b"#pragma unroll %d\n    " % factor + header
    assert expected in cand.rewritten
    region = cand.rewritten[cand.new_region[0] : cand.new_region[1]]
    assert region.count(b"ragma") == 1 and b"UNROLL_TWO" not in region  # the old pragma is gone
    after = analyze_bytes(path, cand.rewritten)
    assert loop_of(after, var).pragma_factor == factor
    assert_all_guards_pass(cand)


def test_pragma_rule_on_a_loop_that_shares_its_line():
    path = SRC / "bodies.cu"
    loop = loop_of(analyzed(path), "k")  # `if (n > 3) for (...)`
    cand = candidate(path, loop, "unroll_pragma", 4)
    assert b'if (n > 3) _Pragma("unroll 4") for (int k = n - 1;' in cand.rewritten
    assert_all_guards_pass(cand)


def test_pragma_rule_on_while_and_do():
    path = SRC / "bodies.cu"
    a = analyzed(path)
    for kind in ("while", "do"):
        cand = candidate(path, loop_of(a, kind=kind), "unroll_pragma", 1)
        assert b"    #pragma unroll 1\n    " + kind.encode() in cand.rewritten
        assert_all_guards_pass(cand)


def test_pragma_rule_skips_a_factor_the_loop_already_has():
    loop = loop_of(analyzed(SRC / "pragmas.cu"), "b")  # #pragma unroll 2
    pragma = next(r for r in rules() if r.name == "unroll_pragma")
    assert pragma.factors_for(loop) == [1, 4, 8]
    with pytest.raises(RocmPerfError, match="already has `#pragma unroll 2`"):
        candidate(SRC / "pragmas.cu", loop, "unroll_pragma", 2)


# ---- the manual rule ---------------------------------------------------------------------------


def test_manual_rule_shape_and_guards():
    path = SRC / "bodies.cu"
    loop = analyzed(path).loops[0]  # for (int i = 0; i < n; ++i) acc += out[i];
    cand = candidate(path, loop, "unroll_manual", 4)
    region = cand.rewritten[cand.new_region[0] : cand.new_region[1]].decode()
    # The next loop of the block declares another `i`: the hoisted init gets a block of its own.
    assert region.startswith("{\n        int i = 0;\n")
    # i starts at 0 and only grows, n is an int: `n - i` cannot overflow, and four remain when it is 4.
    assert "for (; n - i >= 4; ++i) {" in region and "unsigned long long" not in region
    assert region.count("acc += out[i];") == 5 and region.count("{ acc") == 0  # four copies and the remainder, no blocks
    assert "for (; i < n; ++i) acc += out[i];" in region
    assert "#pragma unroll" not in region  # a run-time trip count: the compiler does not unroll it back
    assert cand.summary == "i loop, line 8: unrolled x4, trip count known only at run time: groups of four while 4 remain, then a remainder loop"
    assert_all_guards_pass(cand)


def test_manual_rule_keeps_the_safe_test_where_overflow_is_possible():
    loop = analyzed(DATA / "source" / "bounds.cu").loops[0]  # for (int i = hi - 37; i < hi; ++i)
    region = lambda f: (lambda c: c.rewritten[c.new_region[0] : c.new_region[1]].decode())(
        candidate(DATA / "source" / "bounds.cu", loop, "unroll_manual", f))  # noqa: E731
    assert "for (; i < hi && i + 1 < hi; ++i)" in region(2)  # once i < hi holds, i + 1 cannot overflow
    # i + 3 could (hi = INT_MAX, i = INT_MAX - 1): the distance in unsigned long long, exact for any bound.
    assert "(unsigned long long)(int)(hi) - (unsigned long long)(int)(i) - 1ULL) / 3ULL >= 1ULL" in region(4)


@pytest.mark.parametrize("path_name, var", [("bodies.cu", "k"), ("bodies.cu", "u"), ("bodies.cu", "j"),
                                            ("control.cu", None), ("helpers.cu", "i"), ("templates.cu", "i")])  # fmt: skip
def test_manual_rule_on_edge_cases(path_name, var):
    path = SRC / path_name
    a = analyzed(path)
    loops = [l for l in a.loops if (var is None or l.induction_var == var)]
    manual = next(r for r in rules() if r.name == "unroll_manual")
    applicable = [l for l in loops if manual.factors_for(l)]
    assert applicable
    loop = applicable[-1]
    cand = candidate(path, loop, "unroll_manual", manual.factors_for(loop)[0])
    assert_all_guards_pass(cand)


@pytest.mark.parametrize(
    "index, reason",
    [(0, "the body has a break"), (1, "the body has a continue"), (4, "the body has a goto"),
     (6, "the body writes the induction variable"), (8, "the init declares several variables"),
     (9, "__shared__"), (10, "not a for loop")],
)  # fmt: skip
def test_manual_rule_refusals_say_why(index, reason):
    loop = analyzed(SRC / "control.cu").loops[index]
    manual = next(r for r in rules() if r.name == "unroll_manual")
    assert any(reason in r for r in manual.reasons_not(loop)), manual.reasons_not(loop)
    with pytest.raises(RocmPerfError, match="does not apply"):
        candidate(SRC / "control.cu", loop, "unroll_manual", 2)


def test_manual_factor_above_a_constant_trip_count_is_not_offered():
    loop = loop_of(analyzed(SRC / "helpers.cu"), "k")  # -2..2: five iterations
    assert dict((r.name, f) for r, f in applicable_rules(loop, rules()))["unroll_manual"] == [2, 4]


def test_macro_loops_get_no_rule():
    loop = next(l for l in analyzed(SRC / "macros.cu").loops if l.from_macro)
    assert applicable_rules(loop, rules()) == []
    with pytest.raises(RocmPerfError, match="macro expansion"):
        candidate(SRC / "macros.cu", loop, "unroll_pragma", 2)


def test_crlf_and_utf8_survive_a_rewrite(tmp_path):
    path = tmp_path / "bodies_crlf.cu"
    path.write_bytes((SRC / "bodies.cu").read_bytes().replace(b"\n", b"\r\n"))
    a = analyze_source(path)
    for loop, rule in ((a.loops[1], "unroll_manual"), (a.loops[5], "unroll_pragma")):
        cand = make_candidate(path, a, loop.id, rule, 2, rules=rules())
        assert cand.rewritten.count(b"\n") == cand.rewritten.count(b"\r\n")
        assert "π ≈ 3.14159".encode() in cand.rewritten and "größe".encode() in cand.rewritten
        assert cand.rewritten[: loop.region_start] == cand.original[: loop.region_start]
        assert_all_guards_pass(cand)


# ---- guards on broken candidates ----------------------------------------------------------------


def _tampered(cand, rewritten: bytes, **changes):
    return dataclasses.replace(cand, rewritten=rewritten, **changes)


def test_guards_name_each_failure():
    path = SRC / "bodies.cu"
    a = analyzed(path)
    loop = a.loops[0]
    cand = candidate(path, loop, "unroll_pragma", 2)
    start, end = cand.new_region

    unparsable = _tampered(cand, cand.rewritten[:start] + b"for (int i = 0; i < n; ++i) {" + cand.rewritten[end:])
    v = verdicts(unparsable)
    assert not v["parse_clean"].ok and "does not parse" in v["parse_clean"].reason

    no_restrict = cand.rewritten.replace(b"float* __restrict__ out", b"float* out", 1)
    v = verdicts(_tampered(cand, no_restrict))
    assert not v["signatures_unchanged"].ok and "__restrict__" in v["signatures_unchanged"].reason
    assert not v["diff_inside_loop"].ok

    elsewhere = cand.rewritten.replace(b"naive accumulator", b"plain accumulator") if b"naive" in cand.rewritten else \
        cand.rewritten.replace("naïve".encode(), b"plain", 1)  # fmt: skip
    v = verdicts(_tampered(cand, elsewhere, new_region=(start - 3, end - 3)))
    assert not v["diff_inside_loop"].ok and "outside" in v["diff_inside_loop"].reason

    with_goto = b"{ again: acc += 1.0f; if (acc < 0.0f) goto again; }\n    " + cand.rewritten[start:end]
    v = verdicts(_tampered(cand, cand.rewritten[:start] + with_goto + cand.rewritten[end:],
                           new_region=(start, start + len(with_goto))))  # fmt: skip
    assert not v["no_new_goto_or_labels"].ok and "0 before, 2 after" in v["no_new_goto_or_labels"].reason

    twice = cand.rewritten[start:end] + b"\n    " + a.data[loop.start : loop.end]
    v = verdicts(_tampered(cand, cand.rewritten[:start] + twice + cand.rewritten[end:],
                           new_region=(start, start + len(twice))))  # fmt: skip
    assert not v["loop_exists_once"].ok and "expected 1 loop(s)" in v["loop_exists_once"].reason


def test_barrier_guard_needs_a_block_uniform_trip_count():
    path = SRC / "barriers.cu"
    uniform, per_thread = analyzed(path).loops
    assert_all_guards_pass(candidate(path, uniform, "unroll_manual", 2))
    v = verdicts(candidate(path, per_thread, "unroll_pragma", 2))
    assert not v["barriers_uniform"].ok and "barrier" in v["barriers_uniform"].reason


# ---- commands ----------------------------------------------------------------------------------


def test_loops_command_json(capsys):
    assert run_loops(SRC / "helpers.cu", as_json=True) == 0
    report = json.loads(capsys.readouterr().out)
    by_id = {l["id"]: l for l in report["loops"]}
    assert set(by_id) == {"helpers_kernel:helpers_kernel:1:25", "helpers_kernel:helpers_kernel:2:29",
                          "helpers_kernel:window:1:12", "helpers_kernel:dot4:1:6"}  # fmt: skip
    assert {"name": "unroll_manual", "factors": [2, 4]} in by_id["helpers_kernel:window:1:12"]["rules"]
    assert by_id["helpers_kernel:dot4:1:6"]["trip_count"] == 4


def test_loops_command_table_and_kernel_filter(capsys):
    assert run_loops(SRC / "templates.cu", kernel="ops::add_rows") == 0
    out = capsys.readouterr().out
    assert "kernel ops::add_rows  [_ZN3ops8add_rowsEPKfPfi]" in out and "scale_tiles" not in out
    assert "add_rows:add_rows:1:14" in out and "unroll_pragma x1,2,4,8" in out
    with pytest.raises(RocmPerfError, match="no kernel 'nope'"):
        run_loops(SRC / "templates.cu", kernel="nope")


def test_rewrite_command_writes_only_the_output(tmp_path, capsys):
    source = tmp_path / "helpers.cu"
    source.write_bytes((SRC / "helpers.cu").read_bytes())
    before = source.read_bytes()
    out = tmp_path / "out" / "rewritten.cu"
    assert run_rewrite(source, loop_id="helpers_kernel:dot4:1:6", rule="unroll_pragma", factor=8, write=out) == 0
    captured = capsys.readouterr()
    assert "+    #pragma unroll 8" in captured.out and "guard diff_inside_loop: ok" in captured.err
    assert source.read_bytes() == before
    assert b"#pragma unroll 8\n    for (int i = 0; i < 4; ++i)" in out.read_bytes()
    with pytest.raises(RocmPerfError, match="input file"):
        run_rewrite(source, loop_id="helpers_kernel:dot4:1:6", rule="unroll_pragma", factor=8, write=source)


def test_rewrite_command_fails_with_the_guard_reason(tmp_path, capsys):
    out = tmp_path / "never.cu"
    with pytest.raises(RocmPerfError, match="guard barriers_uniform failed") as e:
        run_rewrite(SRC / "barriers.cu", loop_id="barrier_loops:barrier_loops:2:13", rule="unroll_pragma",
                    factor=2, write=out)  # fmt: skip
    assert e.value.exit_code == 1 and not out.exists()
    assert "guard barriers_uniform: FAILED" in capsys.readouterr().err


def test_cli_exit_codes(capsys):
    from rocm_perf.cli import main

    assert main(["loops", str(SRC / "helpers.cu"), "--json", "--kernel", "helpers_kernel"]) == 0
    assert json.loads(capsys.readouterr().out)["kernels"][0]["name"] == "helpers_kernel"
    code = main(["rewrite", str(SRC / "control.cu"), "--loop", "control_flow:control_flow:1:6",
                 "--rule", "unroll_manual", "--factor", "2"])  # fmt: skip
    assert code == 2 and "the body has a break" in capsys.readouterr().err
    code = main(["rewrite", str(SRC / "barriers.cu"), "--loop", "barrier_loops:barrier_loops:2:13",
                 "--rule", "unroll_pragma", "--factor", "4"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and "rocm-perf: error: guard barriers_uniform failed" in err


def test_pragma_rule_keeps_the_pragmas_neighbours():
    path = SRC / "pragma_neighbours.cu"
    first, second = analyzed(path).loops
    assert (first.pragma, second.pragma) == ("#pragma unroll 2", "#pragma unroll 4")
    cand = candidate(path, first, "unroll_pragma", 8)
    assert b"    #pragma unroll 8\n    // the hot loop\n    for (int a = 0;" in cand.rewritten
    assert_all_guards_pass(cand)
    cand = candidate(path, second, "unroll_pragma", 1)
    assert b"    #pragma clang loop vectorize(enable)\n    #pragma unroll 1\n    for (int b = 0;" in cand.rewritten
    assert_all_guards_pass(cand)
