"""The optimize loop's stages: one module per state of its ledger, each a function `run(ctx)`
that does the state's work (safe to run again from its start: it reads what the ledger already
holds and does only what is missing) and returns the next state. optimize/driver.py says which
runs when; optimize/run_context.py is what each takes.

    baseline.py      build the program and its A/A twin, the AMD check, the reference run
    noise_floor.py   A/A pairs: the paired spread, the decision metric, the bar it sets
    rank.py          kernels by critical-path share (x roofline headroom); loop heat
    propose.py       the proposers' candidates for this generation, planned by expected value
    build.py         render, guard, build once per content, compile-check, drop duplicates
    screen.py        the race: a few interleaved pairs each, more for those still ahead
    confirm.py       a screened winner re-measured fresh, alpha spent across the run; accept
    combine.py       the loops' winners as one candidate, or carried onto the new baseline
    final_check.py   the original against the final program, for the report
    whole_program.py a replayed kernel's accepted result confirmed on the whole program it came from
    finish.py        verdicts, the search prior, summary.json, report.md and report.html
"""
