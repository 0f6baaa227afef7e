"""Compile-first evidence (issue 17): what a built program is (build_cache.py), the machine loop of a
source loop in the AMD ISA (isa_loops.py), the order's named factors (plan.py), the prior of
earlier runs (search_prior.py) and which screened winners are carried together (combine.py).

Real compilers on real sources: g++ through the host backend, Debian's hipcc for the ISA.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rocm_perf.backends.host import HostBackend
from rocm_perf.optimize.build_cache import build_key, code_identity, compiler_identity, elf_sections, location_flags
from rocm_perf.optimize.combine import plan_carry, plan_combination, render_carry
from rocm_perf.optimize.isa_loops import isa_delta, isa_identity, loop_mix
from rocm_perf.optimize.ledger import Trial
from rocm_perf.optimize.plan import evidence_factors
from rocm_perf.optimize.search_prior import PRIOR_NAME, SearchPrior, loop_shape, open_prior, prior_factor
from rocm_perf.source import analyze_source, make_candidate
from conftest import DATA, ROOT

TWO_LOOPS = DATA / "programs" / "two_loops.cu"
REGBLOCK = ROOT / "kernels" / "matmul_regblock.cu"
STENCIL2D = ROOT / "kernels" / "stencil2d.cu"


def place(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name / "source.cu"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


def host_identity(source: Path) -> str:
    program = HostBackend().build(source, source.parent / "build", location_flags(source))
    return code_identity(program.executable)


# ---- what a built program is ---------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.long
def test_builds_of_the_same_code_are_one_program_wherever_they_are_built(tmp_path):
    data = (ROOT / "kernels" / "row_reduce.cu").read_bytes()  # its HIP_CHECK macro prints __FILE__
    here = place(tmp_path, "a", data)
    there = place(tmp_path, "a-much-longer-directory-name", data)
    assert host_identity(here) == host_identity(there)  # __FILE__ in the error macro names source.cu in both
    assert host_identity(here).startswith("elf:")
    # Without the location flags the directory leaks into the program (the reason they exist).
    plain = [code_identity(HostBackend().build(p, p.parent / "plain", []).executable) for p in (here, there)]
    assert plain[0] != plain[1]


@pytest.mark.slow
def test_g_plus_plus_ignores_unroll_1_where_it_would_not_unroll_so_that_candidate_is_the_baseline(tmp_path):
    """The duplicate the host backend meets most: `#pragma unroll 1` (g++: `#pragma GCC unroll 1`)
    on a loop g++ -O2 leaves rolled anyway builds the baseline's very code; x2 does not."""
    analysis = analyze_source(TWO_LOOPS)
    loop = analysis.loops[0]
    base = host_identity(place(tmp_path, "base", TWO_LOOPS.read_bytes()))
    one = make_candidate(TWO_LOOPS, analysis, loop.id, "unroll_pragma", 1)
    two = make_candidate(TWO_LOOPS, analysis, loop.id, "unroll_pragma", 2)
    assert one.rewritten != TWO_LOOPS.read_bytes()  # the source differs ...
    assert host_identity(place(tmp_path, "x1", one.rewritten)) == base  # ... the program does not
    assert host_identity(place(tmp_path, "x2", two.rewritten)) != base


def test_a_file_that_is_not_elf_is_hashed_whole_and_build_keys_follow_content_flags_and_compiler(tmp_path):
    f = tmp_path / "program.cu"
    f.write_bytes(b"int main() {}\n")
    assert elf_sections(f.read_bytes()) is None
    assert code_identity(f).startswith("file:")
    key = build_key(b"x", ["-O2"], "g++ 12")
    assert key == build_key(b"x", ["-O2"], "g++ 12") and len(key) == 20
    assert len({key, build_key(b"y", ["-O2"], "g++ 12"), build_key(b"x", ["-O3"], "g++ 12"),
                build_key(b"x", ["-O2"], "g++ 13")}) == 4
    described = compiler_identity(HostBackend())
    assert described.startswith("host | ") and "g++" in described


def test_elf_sections_reads_a_real_object(tmp_path):
    obj = tmp_path / "x.o"
    (tmp_path / "x.c").write_text("int f(int a) { return a * 3; }\nconst int table[4] = {1, 2, 3, 4};\n")
    import subprocess

    subprocess.run([shutil.which("gcc") or "cc", "-c", "-O2", str(tmp_path / "x.c"), "-o", str(obj)], check=True)
    names = {name for name, *_ in elf_sections(obj.read_bytes())}
    assert {".text", ".rodata", ".symtab"} <= names


# ---- the AMD ISA of a loop -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def regblock_isa(tmp_path_factory):
    """matmul_regblock and three of its candidates compiled for gfx90a with -g (the compile check).
    Tests ask for `hipcc` first, which skips (or fails under CI) where it is missing."""
    from rocm_perf.backends.compile_check import compile_check

    tmp = tmp_path_factory.mktemp("isa")
    analysis = analyze_source(REGBLOCK)
    sources = {"base": REGBLOCK.read_bytes(), "shifted": b"\n" + REGBLOCK.read_bytes()}
    for name, loop_line, rule, factor in (("p_pragma4", 35, "unroll_pragma", 4), ("p_pragma1", 35, "unroll_pragma", 1),
                                          ("j_manual2", 43, "unroll_manual", 2)):
        loop = next(lp for lp in analysis.loops if lp.line == loop_line)
        sources[name] = make_candidate(REGBLOCK, analysis, loop.id, rule, factor).rewritten
    out = {}
    for name, data in sources.items():
        src = place(tmp, name, data)
        report = compile_check(src, keep_isa=True, flags=("-g",), workdir=src.parent / "check")
        assert report.ok, report.errors
        out[name] = (Path(report.isa_path).read_text(), report.kernels[0], len(data.decode().splitlines()))
    return out


def test_isa_identity_is_the_machine_code_alone(hipcc, regblock_isa):
    base = isa_identity(regblock_isa["base"][0])
    assert isa_identity(regblock_isa["shifted"][0]) == base  # same code, every .loc line moved
    assert isa_identity(regblock_isa["p_pragma1"][0]) == base  # clang does not unroll that loop anyway
    assert isa_identity(regblock_isa["p_pragma4"][0]) != base


def test_the_machine_loop_of_a_source_loop_and_what_a_rewrite_does_to_it(hipcc, regblock_isa):
    asm, kernel, lines = regblock_isa["base"]
    p_loop = loop_mix(asm, kernel.mangled, "source.cu", 35, 47)
    assert p_loop is not None and p_loop.matched == "loop"
    assert p_loop.classes["valu"] > 16 and p_loop.classes["vmem"] >= 5 and p_loop.classes["branch"] == 1
    # The j loop at line 43 (trip 4) is unrolled completely by clang: it has no machine loop.
    assert loop_mix(asm, kernel.mangled, "source.cu", 43, 45) is None
    # `#pragma unroll 4` on the p loop: more work per machine iteration, less overhead per work.
    asm4, kernel4, lines4 = regblock_isa["p_pragma4"]
    unrolled = loop_mix(asm4, kernel4.mangled, "source.cu", 35, 47 + lines4 - lines)
    delta = isa_delta(p_loop, unrolled, {"vgpr": kernel.vgpr}, {"vgpr": kernel4.vgpr})
    assert unrolled.work > p_loop.work and delta.per_work < 1.0
    assert delta.vgpr == (kernel.vgpr, kernel4.vgpr) and kernel4.vgpr > kernel.vgpr
    # Unrolling the j loop by hand keeps a real loop (its remainder's `#pragma unroll 1` stops the
    # complete unroll): far more overhead per unit of work in the p loop's hot machine loop.
    asmj, kernelj, linesj = regblock_isa["j_manual2"]
    rolled = loop_mix(asmj, kernelj.mangled, "source.cu", 35, 47 + linesj - lines)
    assert isa_delta(p_loop, rolled, {}, {}).per_work > 1.5
    factors, notes = evidence_factors(isa_delta(p_loop, rolled, {}, {}).to_json(), None, apply_isa=True)
    assert factors["ISA instructions per work"] == 0.25  # the floor of the ISA's say
    assert evidence_factors(delta.to_json(), None, apply_isa=True)[0]["ISA instructions per work"] > 1.0


def test_on_the_host_backend_the_isa_is_recorded_not_applied():
    delta = {"per_work": 0.8, "vgpr": [64, 48]}
    applied, notes = evidence_factors(delta, None, apply_isa=True)
    assert applied["ISA instructions per work"] == pytest.approx(1.8) and applied["VGPRs"] == pytest.approx(1.125)
    factors, notes = evidence_factors(delta, {"factor": 1.5, "won": 2, "tried": 2}, apply_isa=False)
    assert factors == {"prior of earlier runs": 1.5}
    assert "not applied" in notes["ISA"] and "1.80" in notes["ISA"]


# ---- the prior of earlier runs -------------------------------------------------------------------

def test_loop_shapes_of_real_loops():
    loops = {lp.line: lp for lp in analyze_source(REGBLOCK).loops}
    assert loop_shape(loops[35]) == "for/d0/t?/-/-"  # trip count from an argument
    assert loop_shape(loops[39]) == "for/d1/t<=4/pragma/-"
    assert loop_shape(loops[43]) == "for/d2/t<=4/-/-"


def test_the_prior_orders_by_what_won_on_this_machine_and_stays_in_range(tmp_path):
    assert prior_factor(0, 0).factor == 1.0
    assert prior_factor(3, 3).factor == pytest.approx(1.6)
    assert prior_factor(0, 8).factor == 0.5 and prior_factor(50, 50).factor == pytest.approx(2 * 51 / 52)
    assert all(0.5 <= prior_factor(w, t).factor <= 2.0 for t in range(0, 30) for w in range(t + 1))
    prior = SearchPrior(tmp_path / PRIOR_NAME)
    prior.record("run-1", [(1, "host|cpu", "unroll_manual", 4, "for/d0/t?/-/-", True, 0.12),
                           (2, "host|cpu", "unroll_manual", 2, "for/d0/t?/-/-", False, 0.0),
                           (3, "rocm|MI300X", "unroll_manual", 4, "for/d0/t?/-/-", False, 0.0)])
    prior.record("run-1", [(1, "host|cpu", "unroll_manual", 4, "for/d0/t?/-/-", True, 0.12)])  # recorded again: replaced
    assert prior.factor("host|cpu", "unroll_manual", 4, "for/d0/t?/-/-").to_json() == {"factor": pytest.approx(4 / 3), "won": 1, "tried": 1}
    assert prior.factor("host|cpu", "unroll_manual", 2, "for/d0/t?/-/-").won == 0
    assert prior.factor("host|cpu", "unroll_manual", 4, "for/d1/t<=4/-/-").tried == 0  # another shape: no record
    prior.close()
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    assert open_prior(blocked) is None  # the run goes on without a prior


# ---- which winners are carried together ----------------------------------------------------------

def trial(tid: int, loop_key: str, estimate: float) -> Trial:
    return Trial(tid, 0, loop_key, loop_key.split("@")[0], f"{loop_key}-id", "unroll_manual", 4, 1.0, "screened", "",
                 "", "", "", "", {}, {"screen": {"critical_path": {"estimate": estimate}}})


def estimate(t: Trial) -> float:
    return t.evidence["screen"]["critical_path"]["estimate"]


def test_best_winner_per_loop_nested_loops_wait_and_rewritten_loops_conflict():
    stale = [trial(1, "k@10", 0.95), trial(2, "k@10", 0.93), trial(3, "k@30", 0.97), trial(4, "k@12", 0.90),
             trial(5, "g@50", 0.96), trial(6, "g@70", 0.99)]
    ranges = {"k@10": (10, 20), "k@12": (12, 15), "k@30": (30, 35), "g@50": (50, 60), "g@70": None}
    carry = plan_carry(stale, estimate, ranges, set())
    assert carry.superseded == {1: 2}  # one winner per loop: the better estimate
    assert set(carry.conflicts) == {6}  # its loop was rewritten by an accepted change
    # By estimate: 4 (k@12), then 2 (k@10 holds k@12: waits), 5, 3.
    assert carry.components == [4, 5, 3]
    # Once they were tried together, each goes alone, best first (the one that waited too).
    assert plan_carry([t for t in stale if t.id in (2, 3, 4, 5)], estimate, ranges, {3, 4, 5}).components == [4]
    assert plan_carry([t for t in stale if t.id in (2, 3, 5)], estimate, ranges, {3, 4, 5}).components == [2]
    assert plan_carry([t for t in stale if t.id in (3, 5)], estimate, ranges, {3, 4, 5}).components == [5]
    assert plan_carry([], estimate, ranges, set()).components == []


def test_the_generations_combination_is_each_loops_best_nested_loops_included_and_only_once():
    screened = [trial(1, "k@10", 0.95), trial(2, "k@10", 0.93), trial(4, "k@12", 0.90), trial(5, "g@50", 0.96)]
    ranges = {"k@10": (10, 20), "k@12": (12, 15), "g@50": (50, 60)}
    # The best of each loop, best first; k@12 lies in k@10 and is combined with it (render_carry
    # applies the inner rewrite first).
    assert plan_combination(screened, estimate, ranges, set()) == [4, 2, 5]
    assert plan_combination(screened[:2], estimate, ranges, set()) == []  # one loop: nothing to combine
    assert plan_combination(screened, estimate, ranges, {5}) == []  # tried together once: each goes alone
    assert plan_combination(screened, estimate, {**ranges, "g@50": None}, set()) == []


def test_a_combination_of_nested_loops_applies_the_inner_rewrite_first(tmp_path):
    """stencil2d's dy loop (line 37) holds its dx loop (38). Unrolling dy by hand copies dx's loop;
    applied first, it would leave dx's pragma in one copy at most. Either order given renders the
    same source, with the pragma in every copy, and it builds and prints what the original does."""
    from rocm_perf.source import guard_candidate, load_rules

    original = STENCIL2D.read_text()
    base = place(tmp_path, "base", STENCIL2D.read_bytes())
    outer = Trial(1, 0, "stencil_2d@37", "stencil_2d", "", "unroll_manual", 2, 1.0, "screened", "", "", "", "", "", {}, {})
    inner = Trial(2, 0, "stencil_2d@38", "stencil_2d", "", "unroll_pragma", 2, 1.0, "screened", "", "", "", "", "", {}, {})
    tools = type("Tools", (), {"make_candidate": staticmethod(make_candidate), "guard_candidate": staticmethod(guard_candidate)})
    rendered = [render_carry(base, original, comps, tools=tools, rules=load_rules(), flags=[], analysis_of=analyze_source,
                             workdir=tmp_path / name)
                for name, comps in (("outer-first", [outer, inner]), ("inner-first", [inner, outer]))]
    assert all(r.applied == [2, 1] and not r.failed for r in rendered)
    assert rendered[0].source == rendered[1].source
    text = rendered[0].source.decode()
    assert text.count("#pragma unroll 2") == 3  # the dx loop in both copies of the dy body and in its remainder loop
    backend = HostBackend()
    outputs = []
    for name, data in (("original", STENCIL2D.read_bytes()), ("combined", rendered[0].source)):
        src = place(tmp_path, name, data)
        program = backend.build(src, src.parent / "build", location_flags(src))
        run = subprocess.run([str(program.executable)], capture_output=True, text=True, timeout=120, cwd=src.parent)
        assert run.returncode == 0, run.stderr
        outputs.append(run.stdout)
    assert "PASS" in outputs[1] and outputs[0] == outputs[1]
