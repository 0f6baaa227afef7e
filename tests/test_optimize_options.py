"""`rocm-perf optimize` options: defaults, parsing, validation, and what identifies a run."""

import pytest

from rocm_perf.cli import build_parser, main
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.options import options_from_args, parse_duration, parse_fraction


def parse(argv):
    args = build_parser().parse_args(["optimize", *argv])
    return options_from_args(args)


def test_defaults_are_the_documented_ones():
    o = parse(["k.cu"])
    assert (o.min_gain, o.confidence, o.rounds, o.max_rounds, o.max_trials) == (0.02, 0.95, 5, 100, 24)
    assert (o.backend, o.compile_check, o.arch, o.time_budget_s, str(o.out)) == ("auto", "auto", "gfx90a", 3600.0, "runs")
    assert not o.quiet and not o.as_json and o.resume is None


def test_values_in_percent_or_fraction_and_durations():
    assert parse_fraction("2%", "x") == parse_fraction("2", "x") == parse_fraction("0.02", "x") == 0.02
    assert parse_fraction("99", "x") == pytest.approx(0.99)
    assert parse_duration("90") == 90 and parse_duration("30m") == 1800 and parse_duration("2h") == 7200
    for bad in ("0", "100%", "fast"):
        with pytest.raises(RocmPerfError):
            parse_fraction(bad, "--min-gain")
    with pytest.raises(RocmPerfError, match="--time-budget"):
        parse_duration("soon")


def test_lists_and_harness_command():
    o = parse(["k.cu", "--kernels", "a,b", "--rules", "unroll_manual", "--factors", "2,4", "--run", "python h.py {exe}",
               "--cflags", "-DN=4 -I inc"])
    assert o.kernels == ["a", "b"] and o.rules == ["unroll_manual"] and o.factors == [2, 4]
    assert o.cflags == ["-DN=4", "-I", "inc"]
    with pytest.raises(RocmPerfError, match=r"\{exe\}"):
        parse(["k.cu", "--run", "python h.py"])
    with pytest.raises(RocmPerfError, match="--factors"):
        parse(["k.cu", "--factors", "2,x"])
    with pytest.raises(RocmPerfError, match="below --rounds"):
        parse(["k.cu", "--rounds", "10", "--max-rounds", "5"])


def test_fingerprint_ignores_display_and_budget_but_not_results(tmp_path):
    a = parse(["k.cu", "--quiet", "--time-budget", "10m", "--jobs", "1"])
    b = parse(["k.cu", "--json", "--time-budget", "2h"])
    c = parse(["k.cu", "--min-gain", "3%"])
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()
    assert a.recorded()["min_gain"] == 0.02 and "quiet" not in a.recorded()


def test_program_arguments_after_double_dash_reach_the_options(tmp_path, monkeypatch):
    seen = {}

    def fake_run(args, **hooks):
        seen["opt"] = options_from_args(args)
        return 0

    monkeypatch.setattr("rocm_perf.optimize.command.run_optimize", fake_run)
    assert main(["optimize", "k.cu", "--backend", "host", "--", "--size", "64"]) == 0
    assert seen["opt"].program_args == ["--size", "64"] and seen["opt"].backend == "host"


def test_missing_source_is_a_one_line_error(tmp_path, capsys):
    assert main(["optimize", str(tmp_path / "missing.cu"), "--out", str(tmp_path)]) == 2
    assert "missing.cu: no such source file" in capsys.readouterr().err
    assert main(["optimize"]) == 2
    assert "name the .cu source" in capsys.readouterr().err


def test_review_lists_runs_latest_first_and_survives_a_damaged_one(tmp_path, capsys):
    from rocm_perf.optimize.command import find_run, unfinished_run_for
    from rocm_perf.optimize.ledger import open_ledger

    for name, state in (("20260101-000000-a", "screen"), ("20260102-000000-b", "done")):
        ledger = open_ledger(tmp_path / name, create=True)
        ledger.set("fingerprint", "fp")
        ledger.transition(state)
        ledger.close()
    (tmp_path / "20260103-000000-broken").mkdir()
    (tmp_path / "20260103-000000-broken" / "ledger.db").write_text("garbage " * 200)
    assert main(["review", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["20260103-000000-broken", "20260102-000000-b", "20260101-000000-a"]
    assert "unreadable" in lines[1]
    assert unfinished_run_for(tmp_path, "fp") == tmp_path / "20260101-000000-a"
    assert find_run(tmp_path, "latest").name == "20260103-000000-broken"


def test_the_decision_metric_defaults_to_the_cpu_time_path_on_the_host_backend_only():
    from rocm_perf.backends.host import HostBackend
    from rocm_perf.backends.rocm import RocmBackend
    from rocm_perf.optimize.options import resolve_metric

    o = parse(["k.cu"])
    assert o.metric == "auto" and o.warmup == 1 and o.recorded()["metric"] == "auto"
    assert resolve_metric("auto", HostBackend())[0] == "cpu-path"
    assert resolve_metric("auto", RocmBackend())[0] == "critical-path"  # today's default stays on the GPU
    assert resolve_metric("median-path", RocmBackend()) == ("median-path", "--metric median-path")
    with pytest.raises(RocmPerfError, match="--metric cpu-path: not available with the rocm backend here: .*records no "
                                            "per-dispatch HOST_CPU_TIME_NS"):
        resolve_metric("cpu-path", RocmBackend())
    # adjusted-path decides on cpu-path until the A/A pairs fit its exponent; it needs the probe
    assert resolve_metric("adjusted-path", HostBackend()) == ("cpu-path", "--metric adjusted-path")
    with pytest.raises(RocmPerfError, match="--metric adjusted-path: not available with the rocm backend here"):
        resolve_metric("adjusted-path", RocmBackend())
    from rocm_perf.optimize.options import fits_exponent

    assert fits_exponent("adjusted-path", HostBackend()) and fits_exponent("auto", HostBackend())
    assert not fits_exponent("auto", RocmBackend()) and not fits_exponent("cpu-path", HostBackend())
    assert not fits_exponent("auto", PerfRefusedHost())  # no speed probe: nothing to fit
    with pytest.raises(RocmPerfError, match="--warmup -1: must be at least 0"):
        parse(["k.cu", "--warmup", "-1"])


class PerfRefusedHost:
    """A stand-in for a host backend on a machine that refuses perf_event_open (paranoid 3):
    the real one here is root and may count."""

    name = "host"

    def dispatch_clocks(self):
        refused = "perf_event_open refused cycles: Permission denied (perf_event_paranoid 3)"
        return {"HOST_CPU_TIME_NS": "", "HOST_INSTRUCTIONS": refused, "HOST_CYCLES": refused}


def test_a_clock_metric_the_machine_refuses_is_a_one_line_error_before_any_run(tmp_path, monkeypatch, capsys):
    from rocm_perf.optimize.options import resolve_metric

    assert resolve_metric("auto", PerfRefusedHost())[0] == "cpu-path"  # a host that reports no speed probe
    with pytest.raises(RocmPerfError, match="--metric cycles: not available with the host backend here: "
                                            "perf_event_open refused cycles: Permission denied .perf_event_paranoid 3."):
        resolve_metric("cycles", PerfRefusedHost())
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\nint main() { return 0; }\n")
    monkeypatch.setattr("rocm_perf.backends.host.HostBackend.dispatch_clocks", lambda self: PerfRefusedHost().dispatch_clocks())
    assert main(["optimize", str(src), "--backend", "host", "--metric", "instructions", "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("rocm-perf: error: --metric instructions: not available") and len(err) == 1
    assert not (tmp_path / "runs").exists()  # refused before a run directory was made


def test_the_resolved_metric_is_recorded_once_and_a_resumed_run_keeps_it(tmp_path):
    from rocm_perf.backends.host import HostBackend
    from rocm_perf.optimize.ledger import open_ledger
    from rocm_perf.optimize.options import run_pairing, settle_metric

    ledger = open_ledger(tmp_path / "run", create=True)
    o = parse(["k.cu"])
    assert settle_metric(ledger, o, HostBackend()) == "cpu-path"
    recorded = ledger.get("metric")
    assert recorded["name"] == "cpu-path" and "default" in recorded["how"]
    # the host backend's pairs run together: both builds meet one speed of their CPU, no probe to fit
    assert recorded["pairs"] == "together" == run_pairing(ledger) and "run together" in recorded["how"]
    assert "fit_exponent" not in recorded and "steadier_of" not in recorded
    # resumed where auto would mean another metric and pairing, it still decides and pairs as it began
    from rocm_perf.backends.rocm import RocmBackend

    assert settle_metric(ledger, o, RocmBackend()) == "cpu-path"
    assert run_pairing(ledger) == "together"
    ledger.close()

    # pairs run apart: the A/A pairs fit adjusted-path's exponent; its ends stay recorded for the race's check
    apart = open_ledger(tmp_path / "apart", create=True)
    assert settle_metric(apart, parse(["k.cu", "--pairing", "apart"]), HostBackend()) == "cpu-path"
    recorded = apart.get("metric")
    assert recorded["fit_exponent"] and "adjusted-path at the exponent its A/A pairs fit" in recorded["how"]
    assert recorded["steadier_of"] == ["cpu-path", "probed-path"] and recorded["pairs"] == "apart"
    # a run from before --pairing (its metric record says nothing of pairs) goes on running them apart
    apart.set("metric", {k: v for k, v in recorded.items() if not k.startswith("pairs")})
    assert run_pairing(apart) == "apart"
    apart.close()


def test_pairing_auto_is_together_only_where_the_backend_can_time_two_programs_at_once():
    from rocm_perf.backends.host import HostBackend
    from rocm_perf.backends.rocm import RocmBackend
    from rocm_perf.optimize.options import resolve_pairing

    assert resolve_pairing("auto", HostBackend())[0] == "together"
    assert resolve_pairing("auto", RocmBackend()) == ("apart", "the rocm backend's default (--pairing auto): not together, "
                                                               "as a GPU shared by two programs times neither alone")
    assert resolve_pairing("apart", HostBackend()) == ("apart", "--pairing apart")
    with pytest.raises(RocmPerfError, match="--pairing together: the rocm backend cannot time two programs"):
        resolve_pairing("together", RocmBackend())

    class Unpinnable(HostBackend):  # a container that refuses sched_setaffinity
        def pairs_together_refusal(self):
            return "block workers cannot be pinned here (sched_setaffinity refused: Operation not permitted)"

    mode, how = resolve_pairing("auto", Unpinnable())
    assert mode == "apart" and "cannot be pinned" in how  # side by side on two cores would be noisier
    with pytest.raises(RocmPerfError, match="cannot be pinned here"):
        resolve_pairing("together", Unpinnable())
