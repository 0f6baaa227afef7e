"""Every loop x rule of the corpus: the candidate passes the guards and compiles with hipcc for
gfx90a; manual unrolls give bit-identical output on the host backend."""

from __future__ import annotations

import dataclasses
import functools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import DATA, KERNELS
from rocm_perf.backends.hipcc import amd_build_env
from rocm_perf.process import last_lines, run
from rocm_perf.source import analyze_source, applicable_rules, guard_candidate, load_rules, make_candidate

CORPUS = sorted(KERNELS.glob("*.cu"))
ARCH = "gfx90a"


@functools.cache
def rules():
    return load_rules()


@functools.cache
def analysis_of(path: Path):
    return analyze_source(path)


def candidates_of(path: Path):
    """One candidate per (loop, rule) at the rule's largest factor for that loop: the smaller
    factors render the same template with another number (tests/test_rewrite.py covers them)."""
    analysis = analysis_of(path)
    found = []
    for loop in analysis.loops:
        for rule, factors in applicable_rules(loop, rules()):
            found.append(make_candidate(path, analysis, loop.id, rule.name, max(factors), rules=rules()))
    return found


def compile_for_amd(hipcc: str, sources: list[Path], workdir: Path) -> list[tuple[Path, str]]:
    """Device-only compiles in two parallel hipcc runs; the failures with their errors."""
    halves = [sources[0::2], sources[1::2]]

    def compile_all(group: list[Path]) -> list[tuple[Path, str]]:
        failures = []
        for source in group:
            with amd_build_env() as env:  # clang's own temporaries go with it
                done = run([hipcc, f"--offload-arch={ARCH}", "--cuda-device-only", "-O3", "-c", str(source),
                            "-o", str(source.with_suffix(".o"))], timeout=300, cwd=workdir, env=env)  # fmt: skip
            if done.returncode != 0:
                failures.append((source, last_lines(done.stderr, 8)))
        return failures

    with ThreadPoolExecutor(max_workers=2) as pool:
        return [f for result in pool.map(compile_all, [h for h in halves if h]) for f in result]


@pytest.mark.hipcc
@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_every_candidate_passes_the_guards_and_compiles(path, hipcc, tmp_path):
    written = []
    for cand in candidates_of(path):
        failed = [v for v in guard_candidate(cand) if not v.ok]
        if cand.loop.flags.has_barrier and not cand.loop.uniform_trip_count:
            assert [v.name for v in failed] == ["barriers_uniform"], (cand.loop_id, cand.rule, failed)
            continue
        assert not failed, (cand.loop_id, cand.rule, cand.factor, failed)
        out = tmp_path / f"{cand.loop_id.replace(':', '_')}__{cand.rule}_{cand.factor}.cu"
        out.write_bytes(cand.rewritten)
        written.append(out)
    if not written:
        pytest.skip(f"{path.name}: no loop takes a rule")
    failures = compile_for_amd(hipcc, written, tmp_path)
    assert not failures, failures


def manual_everywhere(path: Path, factor: int | None = None) -> tuple[bytes, list[str]]:
    """The program with every loop the manual rule applies to unrolled (innermost loops win where
    loops nest), rewritten from the end of the file so earlier offsets stay valid. The factor is
    `factor`, else 4 where allowed, else the largest allowed."""
    analysis = analysis_of(path)
    manual = next(r for r in rules() if r.name == "unroll_manual")
    chosen = []
    for loop in sorted(analysis.loops, key=lambda l: -l.start):
        factors = manual.factors_for(loop)
        overlaps = any(not (loop.end <= c.region_start or c.end <= loop.region_start) for c, _ in chosen)
        if factors and not overlaps and (loop.uniform_trip_count or not loop.flags.has_barrier):
            preferred = factor or 4
            chosen.append((loop, preferred if preferred in factors else max(factors)))
    current = analysis
    for loop, factor in chosen:
        cand = make_candidate(path, current, loop.id, manual.name, factor, rules=rules())
        current = dataclasses.replace(current, data=cand.rewritten)
    return current.data, [f"{l.id} x{f}" for l, f in chosen]


def _run_host(backend, source: Path, out_dir: Path):
    program = backend.build(source, out_dir)
    env = {"ROCM_PERF_HOST_THREADS": "2", "ROCM_PERF_HOST_SERIAL": "0"}
    return run([str(program.executable)], timeout=300, cwd=out_dir, env=env)


@pytest.mark.slow
@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_manual_unrolls_are_bit_identical_on_the_host(path, tmp_path):
    host = pytest.importorskip("rocm_perf.backends.host")
    backend = host.HostBackend(threads=2)
    ok, why = backend.available()
    if not ok:
        pytest.skip(why)
    rewritten, unrolled = manual_everywhere(path)
    if not unrolled:
        pytest.skip(f"{path.name}: the manual rule applies to no loop")
    builds = {}
    for name, data in (("original", analysis_of(path).data), ("variant", rewritten)):
        source = tmp_path / name / path.name  # the bytes analyzed, even if the corpus file moves on
        source.parent.mkdir()
        source.write_bytes(data)
        builds[name] = _run_host(backend, source, source.parent)
    original, changed = builds["original"], builds["variant"]
    assert original.returncode == 0, original.stderr
    assert changed.returncode == 0, (unrolled, changed.stderr)
    assert "checksum" in original.stdout
    assert changed.stdout == original.stdout, unrolled


@pytest.fixture(scope="module")
def edge_original(tmp_path_factory):
    """tests/data/source/bounds.cu built and run once on the host backend."""
    host = pytest.importorskip("rocm_perf.backends.host")
    backend = host.HostBackend(threads=1)
    ok, why = backend.available()
    if not ok:
        pytest.skip(why)
    source = tmp_path_factory.mktemp("bounds_original") / "bounds.cu"
    source.write_bytes(analysis_of(DATA / "source" / "bounds.cu").data)
    done = _run_host(backend, source, source.parent)
    assert done.returncode == 0, done.stderr
    return backend, done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("factor", [2, 4, 8])
def test_manual_unroll_at_the_edges_of_the_types(edge_original, factor, tmp_path):
    """INT_MIN/INT_MAX, unsigned near 0 and UINT_MAX, 64-bit starts near LLONG_MIN, a runtime
    step, a bound of another type, zero and one iterations: same values in the same order."""
    backend, expected = edge_original
    rewritten, unrolled = manual_everywhere(DATA / "source" / "bounds.cu", factor)
    assert len(unrolled) == 12
    source = tmp_path / "bounds.cu"
    source.write_bytes(rewritten)
    done = _run_host(backend, source, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
