"""A run's derived files, rebuilt from the ledger alone: accepted.diff, final.cu (a project run:
final/ with each changed file), summary.json, report.md, and the one-screen terminal summary."""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

from rocm_perf.atomic_file import write_atomic
from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize.alternatives import INTRO as ALTERNATIVES_INTRO, alternatives
from rocm_perf.optimize.change_summary import diff_size, size_text, trial_hunks
from rocm_perf.optimize.close_calls import close_call, measured_phase, resettled_words, settle_words, unproven
from rocm_perf.optimize.confirmation import confirmation_test
from rocm_perf.optimize.ledger import BASELINE_TRIAL, COMBINATION, Ledger, Trial
from rocm_perf.optimize.measure import metric_of
from rocm_perf.optimize.options import PAIRING_MEANING
from rocm_perf.optimize.yardstick import plain_pairs_interval, shift_words


def unified_diff(before: str, after: str, name: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"a/{name}", tofile=f"b/{name}"))


def changed_files(before_tree: Path, after_tree: Path, sources: list[str]) -> list[tuple[str, bytes, bytes]]:
    """(file, before, after) for each project source that differs between two trees of a run."""
    out = []
    for rel in sources:
        before, after = (Path(before_tree) / rel).read_bytes(), (Path(after_tree) / rel).read_bytes()
        if before != after:
            out.append((rel, before, after))
    return out


def project_diff(changes: list[tuple[str, bytes, bytes]]) -> str:
    """One patch over several files, paths relative to the project root (`git apply` there)."""
    return "".join(unified_diff(b.decode(errors="replace"), a.decode(errors="replace"), rel) for rel, b, a in changes)


def _speedup_text(iv: dict | None) -> str:
    if not iv or not iv.get("n") or iv["estimate"] <= 0:
        return "-"
    return f"{(1 / iv['estimate'] - 1) * 100:+.1f} %"


def build_summary(run_dir: Path, ledger: Ledger, *, state: str | None = None) -> dict:
    """Everything a report needs, from the ledger alone (`state` overrides the recorded one while
    the finishing state writes the files of the finished run)."""
    bases = ledger.baselines()
    trials = ledger.trials()
    accepted = [t for t in trials if t.status == "accepted"]
    return {
        "run": run_dir.name,
        "command": ledger.get("command") or "optimize",  # or try (optimize/try_command.py)
        "state": state or ledger.state,
        "source": ledger.get("source_path"),
        "project": ledger.get("project"),
        "outside": outside_summary(run_dir),  # what a project's builds read outside it (optimize/outside.py)
        "source_sha256": ledger.get("source_sha256"),
        "final_sha256": bases[-1].source_sha256 if bases else None,
        "backend": ledger.get("backend"),
        "device": ledger.get("device"),
        "options": ledger.get("options"),
        # What decided every accept and reject: {"name", "how" it was chosen, "meaning"}.
        "metric": decision_metric(ledger),
        "noise_floor": ledger.get("noise_floor"),
        "effective_min_gain": ledger.get("effective_min_gain"),
        "noise_floor_retakes": ledger.get("noise_floor_retakes") or [],  # from the race's pairs (stages/screen.py _retake_floor)
        "top_kernels": ledger.get("top_kernels", []),
        "roofline": {"baseline": ledger.get("roofline"), "final": ledger.get("roofline_final"),
                     "skipped": ledger.get("roofline_skipped", [])},
        # Where the baseline's time was (optimize/heat.py): candidates were ordered by it.
        "loop_heat": ledger.get("loop_heat"),
        "loop_heat_note": ledger.get("loop_heat_note") or None,
        "cold_loops": ledger.get("cold_loops") or [],
        "stop_reason": ledger.get("stop_reason"),
        "elapsed_s": ledger.get("elapsed_s"),
        "final_check": ledger.get("final_check"),
        # A reproducer's run: what was replayed, and the accepted result on the whole program it came from.
        "replay": ledger.get("replay"),
        "whole_program": ledger.get("whole_program"),
        # On probed-path: the final check's pairs on cpu-path (yardstick.py), {"metric", interval...}
        "final_check_plain": _final_check_plain(ledger),
        "accepted": [{**_trial_json(t), "resource_deltas": resource_deltas(_resources_of(bases, t.generation), t.resources)}
                     for t in accepted],
        "rejected": [_trial_json(t) for t in trials if t.status == "rejected"],
        # Screened rewrites accepted as part of a later trial (a combination, or a carry onto a newer baseline).
        "carried": [_trial_json(t) for t in trials if t.status == "carried"],
        "open": [_trial_json(t) for t in trials if t.status not in ("accepted", "rejected", "carried")],
        # Unproven candidates that read faster than the bar, and the pairs a decision would need (close_calls.py).
        "close_calls": close_calls_of(ledger, trials),
        # Screened winners whose carry onto an accepted change measured no gain there (alternatives.py).
        "alternatives": alternatives(trials, bases),
        "trials": len(trials),
        "search": search_summary(ledger, trials),
    }


def close_calls_of(ledger: Ledger, trials: list[Trial]) -> list[dict]:
    """The run's close calls (close_calls.py), best estimate first, each with what settling it would
    take in words (`settle`): not of a loop that had a change accepted (its winner settled it), nor
    a rewrite carried onto a newer baseline (the carry is its measurement there),
    judged against the min gain the run used, on its decision metric, at the level of the run's
    first confirmation (per look)."""
    options = ledger.get("options") or {}
    settled = {t.loop_key for t in trials if t.status in ("accepted", "carried")}
    # A rewrite carried onto a newer baseline was measured again there, as the carry: its own ratio is
    # the older baseline's (softmax: 0.942 screened, gone once another loop's change was accepted).
    carried = {c for t in trials if t.components and t.rule != COMBINATION for c in t.components}
    unsettled = [t for t in trials if unproven(t.status, t.reason) and t.loop_key not in settled and t.id not in carried]
    if not options or not unsettled:
        return []  # before reading any rounds or calibrating the confirmation's level
    threshold = 1.0 - float(ledger.get("effective_min_gain") or options.get("min_gain", 0.02))
    alpha = 1.0 - float(options.get("confidence", 0.95))
    tail = confirmation_test(float(options.get("min_gain", 0.02)), alpha, int(options.get("rounds", 5)),
                             int(options.get("max_rounds", 100)), int(options.get("round_step", 0) or 0)
                             ).with_alpha(acc.confirmation_alpha(alpha, 1)).look_alpha
    metric = decision_metric(ledger)["name"]
    pair_s, max_rounds = ledger.get("pair_seconds"), int(options.get("max_rounds", 100))
    calls = []
    for t in unsettled:
        call = close_call(t.id, t.label, t.status, t.reason, t.detail, t.evidence, threshold,
                          _decision_pairs(ledger.rounds(t.id, measured_phase(t.evidence)), metric), tail)
        if call:
            record = call.to_json()
            calls.append({**record, "settle": settle_words(record, pair_s, max_rounds)})
    return sorted(calls, key=lambda c: (c["estimate"], c["trial"]))


def _decision_pairs(rounds, metric: str) -> tuple[list[float], list[float]]:
    """The complete pairs of one trial's phase (ledger RoundRows) on `metric`, in pair order."""
    by_pair: dict[int, dict[str, float | None]] = {}
    for r in rounds:
        if r.ok:
            by_pair.setdefault(r.idx, {})[r.role] = metric_of(r.cp_ns, r.outputs, metric)
    b, c = [], []
    for i in range(len(by_pair)):
        pair = by_pair.get(i, {})
        if not pair.get("B") or not pair.get("C"):
            break  # a failed round ends a trial's pairs (interleaved.pair_values)
        b.append(float(pair["B"]))
        c.append(float(pair["C"]))
    return b, c


def _final_check_plain(ledger: Ledger) -> dict | None:
    final_check = ledger.get("final_check")
    if not final_check or not final_check.get("n"):
        return None
    plain = plain_pairs_interval(ledger.rounds(BASELINE_TRIAL, "final"), decision_metric(ledger)["name"],
                                 final_check["tail_alpha"])
    return None if plain is None else {"metric": plain[0], **plain[1].to_json()}


def search_summary(ledger: Ledger, trials: list[Trial]) -> dict:
    """How the candidates were searched: planned, built, duplicates, raced, carried (optimize/stages/)."""
    built = [t for t in trials if t.build_key]
    race = ledger.get("race") or {}
    return {
        "planned": sum(1 for t in trials if not t.components),
        "builds": len({t.build_key for t in built}),
        "duplicates": sum(1 for t in trials if t.reason == "duplicate"),
        "raced": sum(1 for t in trials if not t.components and ledger.decision(t.id, "screen") is not None),
        "carries": sum(1 for t in trials if t.components),
        "race_plan": race.get("plan"),
        "pair_seconds": ledger.get("pair_seconds"),
    }


def retake_text(retakes: list[dict] | None) -> str:
    """The last re-take of the noise floor (stages/screen.py _retake_floor's ledger records) in words; '' for none."""
    if not retakes:
        return ""
    record = retakes[-1]
    return (f"re-taken from the race's {record['pairs']} pairs ({record['racers']} candidates x {record['rung']}; spread "
            f"{record['spread'] * 100:.1f} % vs {record['from_spread'] * 100:.1f} %): min gain "
            f"{record['from_min_gain'] * 100:.2f} % lowered to {record['min_gain'] * 100:.2f} %")


def decision_metric(ledger: Ledger) -> dict:
    """The run's decision metric as recorded; a run from before the record decided on its option."""
    from rocm_perf.optimize.measure import METRIC_CRITICAL_PATH, metric_meaning

    recorded = ledger.get("metric")
    if recorded:
        return recorded
    name = (ledger.get("options") or {}).get("metric") or METRIC_CRITICAL_PATH
    return {"name": name, "how": f"--metric {name}", "meaning": metric_meaning(name)}


def metric_choice_text(record: dict) -> str:
    """How --metric auto chose among its clock paths (stages/noise_floor.py choose_metric, stages/screen.py _recheck_metric);
    "" when the metric was settled before the run."""
    aa = record.get("aa_spreads")
    if not (record.get("steadier_of") or record.get("fit_exponent")) or not aa:
        return ""

    def spreads(values: dict) -> str:
        return ", ".join(f"{m} {v * 100:.1f} %" for m, v in values.items())

    fit = record.get("exponent_fit")
    basis = (f"exponent from the slope of log cpu-path on the log of the probe over the {fit['rounds']} A/A rounds, "
             f"{fit['slope']:.2f} (correlation {fit['correlation']:.2f}); paired spread {spreads(aa)}" if fit
             else f"paired spread {spreads(aa)}")
    check = record.get("race_check")
    if not check:
        return f"chosen over the A/A pairs ({basis})"
    if check["from"] == record["name"]:
        return (f"chosen over the A/A pairs ({basis}) and kept over them and the race's first rung, {check['pairs']} "
                f"pairs ({spreads(check['spreads'])})")
    return (f"the A/A pairs chose {check['from']} ({basis}); over them and the race's first rung, "
            f"{check['pairs']} pairs, {record['name']} was steadier ({spreads(check['spreads'])}) and decided from that rung on")


def _resources_of(bases, generation: int) -> dict:
    for b in bases:
        if b.generation == generation:
            return b.resources
    return {}


def resource_deltas(before: dict, after: dict) -> dict:
    """Per kernel, the AMD resources that changed: {kernel: {field: [before, after]}}."""
    out = {}
    for name, b in before.items():
        a = after.get(name)
        if not isinstance(a, dict) or not isinstance(b, dict):
            continue
        changed = {k: [b.get(k), a.get(k)] for k in a if k != "mangled" and a.get(k) != b.get(k)}
        if changed:
            out[name] = changed
    return out


def _trial_json(t: Trial) -> dict:
    return {"id": t.id, "kernel": t.kernel, "loop": t.loop_id, "rule": t.rule, "factor": t.factor,
            "status": t.status, "reason": t.reason, "detail": t.detail, "evidence": t.evidence,
            "resources": t.resources, "diff": t.diff, "generation": t.generation, "file": t.file, "label": t.label,
            "ordering": t.ordering, "components": t.components,
            # Where it came from (optimize/proposers/): the rules, a patch (its file, sha256 and diff), a tunable's values.
            "proposer": t.proposer, "provenance": t.provenance}


def before_after(run_dir: Path) -> dict | None:
    """Per kernel, the original program against the final one over the final check's rounds (every
    dispatch of every round), with the comparison `rocm-perf compare` makes; None without a final check."""
    from rocm_perf.analysis.compare import compare_traces, pooled
    from rocm_perf.errors import RocmPerfError
    from rocm_perf.trace.load import load_trace

    profiles = run_dir / "baseline" / "profiles"
    try:
        original = [load_trace(db) for db in sorted(profiles.glob("final-*-B/*.db"))]
        final = [load_trace(db) for db in sorted(profiles.glob("final-*-C/*.db"))]
        if not original or not final:
            return None
        return compare_traces(pooled(original), pooled(final), phases=False, critical_path=False,
                              a_label="original", b_label="final").to_json()
    except RocmPerfError as e:
        return {"error": str(e)}


def add_change_summaries(run_dir: Path, ledger: Ledger, summary: dict) -> dict:
    """Each accepted change's diff hunk by hunk with what each does, and its size (change_summary.py:
    it parses the baselines, so the run list of `review` does without)."""
    for t in summary["accepted"]:
        trial = ledger.trial(t["id"])
        t["hunks"] = [h.to_json() for h in trial_hunks(run_dir, ledger, trial)]
        t["diff_size"] = diff_size(t["diff"])
    return summary


def write_artifacts(run_dir: Path, ledger: Ledger, *, state: str | None = None) -> dict:
    """accepted.diff, final.cu, summary.json, report.md in run_dir; returns the summary."""
    bases = ledger.baselines()
    summary = add_change_summaries(run_dir, ledger, build_summary(run_dir, ledger, state=state))
    summary["before_after"] = before_after(run_dir)
    project = ledger.get("project")
    if bases and project:
        changes = changed_files(run_dir / bases[0].source_path, run_dir / bases[-1].source_path, project["sources"])
        summary["files_changed"] = [rel for rel, _, _ in changes]
        final_dir = run_dir / "final"
        if final_dir.exists():
            shutil.rmtree(final_dir)
        for rel, _, after in changes:
            (final_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            write_atomic(final_dir / rel, after)
        write_atomic(run_dir / "accepted.diff", project_diff(changes).encode())
    elif bases:
        original = (run_dir / bases[0].source_path).read_bytes()
        final = (run_dir / bases[-1].source_path).read_bytes()
        name = Path(ledger.get("source_path") or "source.cu").name
        write_atomic(run_dir / "final.cu", final)
        write_atomic(run_dir / "accepted.diff",
                     unified_diff(original.decode(errors="replace"), final.decode(errors="replace"), name).encode())
    write_atomic(run_dir / "summary.json", json.dumps(summary, indent=2, default=str).encode())
    write_atomic(run_dir / "report.md", render_markdown(summary).encode())
    return summary


def outside_summary(run_dir: Path) -> dict | None:
    """The run's outside files (None without any): names, what compiles read, their digest, and
    which of the user's originals differ now from what the builds saw."""
    from rocm_perf.optimize.outside import STORE, OutsideStore

    if not (Path(run_dir) / STORE / "manifest.json").is_file():
        return None
    store = OutsideStore.open(run_dir, Path(run_dir))
    return store.summary() if store.files else None


def outside_line(outside: dict) -> str:
    """The report's line on files read outside the project."""
    files = outside["files"]
    shown = ", ".join(f"`{f}`" for f in files[:6]) + (f" and {len(files) - 6} more" if len(files) > 6 else "")
    changed = outside.get("changed_since") or []
    state = (f"{len(changed)} of them changed in your checkout since they were copied: the builds used the copies"
             if changed else "unchanged in your checkout (sha256)")
    return (f"- outside the project: {len(files)} file(s) the build reads, copied read-only beside every build copy "
            f"({shown}); {state}, digest {outside['digest'][:12]}")


def render_markdown(s: dict) -> str:
    lines = [f"# rocm-perf {s.get('command') or 'optimize'}: {s['run']}", ""]
    lines += [f"- source: `{s['source']}` (sha256 {str(s['source_sha256'])[:12]})",
              f"- backend: {s['backend']} ({s['device']})" + ("; timings are CPU timings" if s["backend"] == "host" else ""),
              f"- state: {s['state']}" + (f"; stopped because {s['stop_reason']}" if s.get("stop_reason") else ""),
              f"- trials: {s['trials']}, accepted: {len(s['accepted'])}"]
    project = s.get("project")
    if project:
        lines.insert(3, f"- project: built with `{project['build']}`, run with `{project['run']}`; sources "
                        + ", ".join(f"`{rel}`" for rel in project["sources"])
                        + (f"; changed: {', '.join(f'`{rel}`' for rel in s['files_changed'])}" if s.get("files_changed") else ""))
    outside = s.get("outside")
    if outside:
        lines.insert(4, outside_line(outside))
    metric = s.get("metric") or {}
    name = metric.get("name", "critical-path")
    if metric:
        chosen = metric_choice_text(metric)
        lines.append(f"- decided on: **{name}**, the {metric.get('meaning')} ({metric.get('how')})" + (f"; {chosen}" if chosen else ""))
        if metric.get("pairs"):
            lines.append(f"- pairs: {metric['pairs']}: {PAIRING_MEANING.get(metric['pairs'], '')} ({metric.get('pairs_how')})")
    nf = s.get("noise_floor")
    if nf:
        lines.append(f"- A/A noise floor ({name}): ratio {acc.interval_text(nf['interval'])}, floor {nf['floor'] * 100:.2f} %;"
                     f" min gain used {float(s['effective_min_gain']) * 100:.2f} %"
                     + (f"; floor {retake_text(s['noise_floor_retakes'])}" if s.get("noise_floor_retakes") else ""))
    if s.get("final_check"):
        lines.append(f"- original vs final ({name}): ratio {acc.interval_text(s['final_check'])}, "
                     f"speedup {_speedup_text(s['final_check'])}, over {s['final_check'].get('n', 0)} interleaved pairs"
                     + _plain_text(s.get("final_check_plain")))
    lines += _replay_lines(s)
    lines += _before_after_markdown(s.get("before_after"))
    lines += _roofline_lines(s.get("roofline") or {}, s.get("top_kernels", []))
    lines.append("")
    lines.append("## Accepted changes")
    if not s["accepted"]:
        calls = len(s.get("close_calls") or [])
        lines.append("\nNone: no candidate was proven faster"
                     + (f" ({calls} close call{'s' if calls > 1 else ''} below)." if calls else "."))
    for t in s["accepted"]:
        conf = t["evidence"].get("confirm", {})
        where = f" in `{t['file']}`" if t.get("file") else ""
        title = (f"{t['kernel']}{where} loop {t['loop']}, {t['rule']} x{t['factor']}" if t.get("proposer", "rules") == "rules"
                 and t["rule"] != "combination" else f"{t['label']}{where}" if t["rule"] != "combination"
                 else f"{t['label']}: {t['kernel']} loops {t['loop']}")
        if t.get("components") and t["rule"] != "combination":
            title += f" (trial {t['components'][0]}'s rewrite, carried onto the newer baseline)"
        lines += ["", f"### Trial {t['id']}: {title}", "",
                  f"- {conf.get('metric', name)} ratio (fresh re-measure): {acc.interval_text(conf.get('critical_path'))},"
                  f" speedup {_speedup_text(conf.get('critical_path'))}, {conf.get('rounds')} rounds",
                  f"- kernel ratio (median dispatch, wall clock): {acc.interval_text(conf.get('kernel'))}",
                  *_probe_shift_lines(conf),
                  f"- screening: {acc.interval_text(t['evidence'].get('screen', {}).get('critical_path'))}"
                  + (f"; {resettled_words(t['evidence']['close_call'])}" if t["evidence"].get("close_call") else ""),
                  f"- confirmation: #{conf.get('confirmation', {}).get('k')} of the run, at level "
                  f"{conf.get('confirmation', {}).get('alpha', float('nan')):.4g} (alpha spent across the run)",
                  _outputs_line(conf.get("outputs") or {})]
        if t["resources"]:
            deltas = t.get("resource_deltas") or {}
            lines.append("- AMD resources (compile check): " + (
                "; ".join(f"{k}: " + ", ".join(f"{f} {v[0]} -> {v[1]}" for f, v in d.items()) for k, d in deltas.items())
                or "unchanged"))
        lines += _change_markdown(t)
    lines += _close_calls_markdown(s)
    lines += _alternatives_markdown(s)
    if s.get("carried"):
        lines += ["", "Carried (accepted as part of a later trial): " + ", ".join(
            f"trial {t['id']} ({t['rule']} x{t['factor']} on {t['loop']}, {t['detail']})" for t in s["carried"])]
    lines += ["", "## Rejected candidates", "", "| trial | kernel | loop | rule | factor | reason | detail |",
              "|---|---|---|---|---|---|---|"]
    for t in s["rejected"]:
        detail = _cell(t["detail"] or "", 300)
        lines.append(f"| {t['id']} | {t['kernel']} | {t['loop']} | {t['rule']} | {t['factor']} | {t['reason']} | {detail} |")
    lines += _search_markdown(s)
    return "\n".join(lines) + "\n"


def _outputs_line(out: dict) -> str:
    """How an accepted candidate's outputs were judged on its timed rounds."""
    criterion = out.get("criterion") or "bit-identical"
    if criterion == "bit-identical":
        line = (f"- outputs: {out.get('rounds_checked')} timed rounds matched the baseline"
                f" (exit 0, {out.get('digests')} copy digests, standard output)")
    else:
        line = (f"- outputs: {out.get('rounds_checked')} timed rounds within {criterion} of the baseline's (exit 0, "
                f"the device-to-host copies element by element where kept, numbers in the standard output); worst "
                f"relative error {float(out.get('worst_rel') or 0):.3g}, absolute {float(out.get('worst_abs') or 0):.3g}")
    notes = [*out.get("notes", []), *out.get("guard_notes", [])]
    return line + "".join(f"; {n}" for n in notes)


CLOSE_CALLS_SHOWN = 10  # in report.md, best estimate first (summary.json has them all; the terminal the first 3)


def replay_words(s: dict) -> tuple[str, str]:
    """(what a reproducer's run measured, what the whole program said of its result), "" where not a replay."""
    replay = s.get("replay")
    if not replay:
        return "", ""
    measured = (f"dispatch {replay['dispatch']} of {replay['kernel']} replayed from {replay['reproducer']} "
                f"({replay['passes']} passes per round), captured from {replay['origin'].get('display')}")
    whole = s.get("whole_program") or {}
    verdict = whole.get("verdict", "not checked yet")
    said = f"{verdict}" + (f": {whole['detail']}" if whole.get("detail") else "")
    return measured, said


def _replay_lines(s: dict) -> list[str]:
    measured, said = replay_words(s)
    if not measured:
        return []
    lines = [f"- measured on the replay: {measured}; the ratios above are the kernel's time",
             f"- on the whole program ({(s.get('whole_program') or {}).get('program', s['replay']['origin'].get('path'))}): {said}"]
    if (s.get("whole_program") or {}).get("verdict") == "confirmed":
        lines.append(f"- `rocm-perf apply {s['run']}` writes the confirmed change to the original source "
                     f"(`{(s.get('whole_program') or {}).get('diff', 'whole_program.diff')}` shows it)")
    elif s["accepted"]:
        lines.append("- not confirmed on the whole program: `rocm-perf apply` will not write it (`--patch` prints it)")
    return lines


def _change_markdown(t: dict) -> list[str]:
    """An accepted change as a reviewer reads it: its size, then each hunk under what it does."""
    hunks = t.get("hunks")
    if not hunks:
        return ["", "```diff", t["diff"].rstrip(), "```"]
    lines = ["", f"Diff: {size_text(t['diff_size'])}."]
    for h in hunks:
        what = h["summary"] or [f"lines {h['old_start']}-{h['old_start'] + max(h['old_lines'], 1) - 1}"]
        lines += [""] + [f"- {line} (+{h['added']} -{h['removed']})" if i == 0 else f"- {line}"
                         for i, line in enumerate(what)]  # fmt: skip
        lines += ["", "```diff", h["text"].rstrip(), "```"]
    return lines


def _cell(text: str, limit: int) -> str:
    """`text` as one markdown table cell, cut at a word (never inside a number) past `limit` characters."""
    text = " ".join(text.replace("|", "\\|").split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " ..."


def _close_calls_markdown(s: dict) -> list[str]:
    calls = s.get("close_calls") or []
    if not calls:
        return []
    lines = ["", "## Close calls", "",
             f"Read faster than the bar ({calls[0]['threshold']:.3f}) but stopped unproven; none was accepted. "
             "The pairs a decision would need assume its ratio holds (a race's best estimates tend to be "
             "optimistic); where they are more than `--max-rounds`, a longer one (with a `--time-budget` to pay "
             "for it) lets a run measure that far, and a lower `--min-gain` asks for less.", "",
             "| trial | candidate | ratio (where) | pairs | stopped | to settle |", "|---|---|---|---:|---|---|"]
    for c in calls[:CLOSE_CALLS_SHOWN]:
        stopped = c["reason"] + (f": {c['detail']}" if c.get("detail") else "")
        lines.append(f"| {c['trial']} | {_cell(c['label'], 120)} | {c['estimate']:.3f} [{c['low']:.3f}, {c['high']:.3f}] "
                     f"({c['phase']}) | {c['pairs']} | {_cell(stopped, 160)} | {c['settle']} |")
    if len(calls) > CLOSE_CALLS_SHOWN:
        lines.append(f"\n({len(calls) - CLOSE_CALLS_SHOWN} more in summary.json, `close_calls`.)")
    return lines


def _alternatives_markdown(s: dict) -> list[str]:
    alts = s.get("alternatives") or []
    if not alts:
        return []
    lines = ["", "## Alternatives that did not add", "", ALTERNATIVES_INTRO, "",
             "| trial | candidate | what was measured |", "|---|---|---|"]
    lines += [f"| {a['trial']} | {_cell(a['label'], 120)} | {_cell(a['words'], 1000)} |" for a in alts]
    return lines


def _race_plan_words(plan: dict) -> str:
    """The race's rungs and levels as the Search section says them ("" without a race)."""
    if not plan:
        return ""
    known = (f"; before {plan.get('futility_from')} pairs the futility rule went by the A/A spread, "
             f"{plan['known_spread']:.1%}, where a racer's own was larger") if plan.get("known_spread") else ""
    return (f" in rungs of {', '.join(map(str, plan.get('rungs', [])))} pairs "
            f"(each look at {plan.get('look_alpha', 0):.4g} per tail{known})")


def _search_markdown(s: dict) -> list[str]:
    """How the search went, and why each candidate came where it did (its named factors)."""
    search = s.get("search") or {}
    ranked = [t for t in s["accepted"] + s["carried"] + s["rejected"] + s["open"] if t.get("ordering", {}).get("factors")]
    if not ranked:
        return []
    plan = search.get("race_plan") or {}
    lines = ["", "## Search", "",
             f"{search.get('planned', 0)} candidates planned, built first ({search.get('builds', 0)} builds by content); "
             f"{search.get('duplicates', 0)} duplicate(s) of the baseline or of another candidate dropped; "
             f"{search.get('raced', 0)} raced" + _race_plan_words(plan)
             + (f"; {search['carries']} combination(s) or carries of screened winners" if search.get("carries") else "") + ".",
             "", "Candidates in their order: the score is the product of the named factors; ISA evidence and the prior of "
             "earlier runs are added once a candidate is built.", "",
             "| trial | candidate | score | factors | outcome |", "|---|---|---:|---|---|"]
    for t in sorted(ranked, key=lambda t: (-float(t["ordering"].get("score", 0) or 0), t["id"])):
        o = t["ordering"]
        factors = ", ".join(f"{k} {v:.3g}" for k, v in o.get("factors", {}).items())
        notes = "; ".join(o.get("notes", {}).values())
        outcome = t["status"] + (f": {t['reason']}" if t["reason"] and t["status"] == "rejected" else "")
        lines.append(f"| {t['id']} | {t['label']} | {float(o.get('score', 0) or 0):.3g} | {factors}"
                     + (f" ({notes})" if notes else "") + f" | {outcome} |")
    return lines


def _before_after_markdown(doc: dict | None) -> list[str]:
    """The per-kernel before/after table (the numbers of `rocm-perf compare`, original vs final)."""
    if not doc:
        return []
    if "error" in doc:
        return ["", "## Before / after, per kernel", "", f"Not compared: {doc['error']}"]
    lines = ["", "## Before / after, per kernel", "",
             f"Original against final over the final check's rounds; {doc['test']['per_kernel']}, "
             f"{doc['test']['family_wise']} at {doc['test']['alpha']:g}.", "",
             "| kernel | status | calls | median before us | median after us | change | p (Holm) |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for k in doc["kernels"][:15]:
        before, after = k.get("a_median_ns"), k.get("b_median_ns")
        change = f"{(after / before - 1) * 100:+.1f} %" if before and after is not None else "-"
        p = "-" if k.get("p_holm") is None else f"{k['p_holm']:.2g}"
        cell = lambda v: "-" if v is None else f"{v / 1000:,.1f}"  # noqa: E731
        lines.append(f"| `{k['name'][:80].replace('|', chr(92) + '|')}` | {k['status']} | {k['a_calls']} / {k['b_calls']} | "
                     f"{cell(before)} | {cell(after)} | {change} | {p} |")
    total = doc["total"]
    lines.append(f"\nKernel time over those rounds: {total['a_ns'] / 1000:,.1f} us -> {total['b_ns'] / 1000:,.1f} us.")
    return lines


def _plain_text(plain: dict | None) -> str:
    """'; cpu-path over the same pairs: ...' where a probe-divided metric decided, else ''."""
    if not plain:
        return ""
    return f"; {plain['metric']} over the same pairs: {_speedup_text(plain)} (ratio {acc.interval_text(plain)})"


def _probe_shift_lines(conf: dict) -> list[str]:
    """Where a probe-divided metric decided: whether the candidate moved the probe (yardstick.py),
    and the plain metric over the same pairs."""
    shift, plain = conf.get("probe_shift"), conf.get("plain")
    if not shift:
        return []
    line = f"- speed probe, candidate's readings over the baseline's: {acc.interval_text(shift)}, {shift_words(shift)}"
    if plain:
        line += f"; {plain['metric']} over the same pairs: ratio {acc.interval_text(plain)}, speedup {_speedup_text(plain)}"
    return [line]


def _roofline_lines(roofline: dict, top: list[dict]) -> list[str]:
    """The ranking's evidence from the counters: where each analysis is, each top kernel's headroom,
    and every kernel that got no unroll candidates and why."""
    base = roofline.get("baseline") or {}
    if not base:
        return []
    if not base.get("analysis"):
        return [f"- roofline: {base.get('note', 'none')}"]
    lines = [f"- roofline of the baseline ({base['how']}): `{base['analysis']}`; kernels ranked by critical-path "
             "share x headroom"]
    final = roofline.get("final") or {}
    if final.get("analysis"):
        lines.append(f"- roofline of the accepted result: `{final['analysis']}`")
    for k in top:
        if k.get("headroom") is not None:
            lines.append(f"- `{k['kernel']}`: {k.get('bound') or 'bound unknown'}, headroom {k['headroom'] * 100:.0f} %, "
                         f"critical-path share {k['cp_share'] * 100:.1f} %")
    for k in roofline.get("skipped", []):
        lines.append(f"- `{k['kernel']}`: no unroll candidates: {k['reason']}")
    return lines


def terminal_summary(s: dict) -> str:
    """The one-screen summary printed at the end of a run (and by `review RUN`)."""
    measured, said = replay_words(s)
    out = [f"run {s['run']}: {s['state']}, {s['trials']} trials, {len(s['accepted'])} accepted"
           + (" on the replay" if measured else "") + (f" (stopped: {s['stop_reason']})" if s.get("stop_reason") else "")]
    if measured:
        out.append(f"  measured on the replay of {measured}")
    name = (s.get("metric") or {}).get("name", "critical-path")
    out.append(f"  decided on {name}: the {(s.get('metric') or {}).get('meaning', name)}")
    if (s.get("metric") or {}).get("pairs"):
        out.append(f"  pairs run {s['metric']['pairs']}: {PAIRING_MEANING.get(s['metric']['pairs'], '')}")
    check = (s.get("metric") or {}).get("race_check")
    if check and check["from"] != name:
        out.append(f"  metric: {metric_choice_text(s['metric'])}")
    nf = s.get("noise_floor")
    if nf:
        out.append(f"  A/A noise floor {nf['floor'] * 100:.2f} %, min gain used {float(s['effective_min_gain']) * 100:.2f} %"
                   + (f" (floor {retake_text(s['noise_floor_retakes'])})" if s.get("noise_floor_retakes") else ""))
    for t in s["accepted"]:
        conf = t["evidence"].get("confirm", {})
        what = f"{t['rule']} x{t['factor']}" if t["factor"] else t["rule"]  # a combination has no factor
        who = f"{t['kernel']} {t['loop']} {what}" if t.get("proposer", "rules") == "rules" else t["label"]
        size = t.get("diff_size") or diff_size(t.get("diff") or "")
        out.append(f"  + #{t['id']} {who}: "
                   f"{_speedup_text(conf.get('critical_path'))} {conf.get('metric', name)}, ratio {acc.interval_text(conf.get('critical_path'))}"
                   f"; diff +{size['added']} -{size['removed']}")
        for h in t.get("hunks") or []:
            out += [f"      {line}" for line in h["summary"]]
    by_reason: dict[str, int] = {}
    for t in s["rejected"]:
        by_reason[t["reason"]] = by_reason.get(t["reason"], 0) + 1
    if by_reason:
        out.append("  rejected: " + ", ".join(f"{n} {r}" for r, n in sorted(by_reason.items())))
    for c in (s.get("close_calls") or [])[:3]:  # unproven, read faster than the bar (report.md: Close calls)
        out.append(f"  ? #{c['trial']} {c['label']}: read {c['estimate']:.3f} after {c['pairs']} pairs, {c['reason']}; {c['settle']}")
    alts = s.get("alternatives") or []
    if alts:  # screened winners that added nothing on top of an accepted change (report.md: Alternatives)
        out.append(f"  = {len(alts)} screened winner{'s' if len(alts) > 1 else ''} of other loops added nothing on top of "
                   f"the accepted change{'s' if len(s['accepted']) > 1 else ''}: alternatives, not extras (report.md)")
    if s.get("final_check"):
        out.append(f"  original -> final{' (the kernel, on the replay)' if measured else ''}: "
                   f"{_speedup_text(s['final_check'])} {name} (ratio {acc.interval_text(s['final_check'])})"
                   + _plain_text(s.get("final_check_plain")))
    if measured and s["accepted"]:
        whole = s.get("whole_program") or {}
        out.append(f"  the whole program: {_speedup_text(whole.get('critical_path'))} {name}, {said}")
    return "\n".join(out)
