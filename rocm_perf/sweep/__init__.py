"""Overnight sweeps: many targets, one time budget, resumable, and a watch mode (the daemon).

    rocm-perf sweep kernels/ --budget 8h            # every .cu in kernels/, 8 hours in all
    rocm-perf sweep --resume runs/sweep-...          # after kill -9, a reboot, or Ctrl-C
    rocm-perf sweep kernels/ sweep.toml --watch      # keep running; re-optimize what changes
    rocm-perf status runs/sweep-...                  # what it is doing right now

A sweep directory holds sweep.db (the sweep ledger: targets, status, budget spent, events),
sweep.lock (one process per sweep directory), status.json (the heartbeat `status` reads),
sweep.log, triage/ (each target's first build and profile) and runs/<target>/<run>/ (each
target's `rocm-perf optimize` run with its own ledger).

The modules, in the order a sweep uses them:

    command.py     `rocm-perf sweep`: arguments, a new or resumed sweep directory, then Sweep.run
    targets.py     what to optimize: .cu files, folders of them, TOML manifests
    schedule.py    the settings, the budget, the order of targets and each one's share of time
    loop.py        Sweep: triage, then optimize target after target until work or budget is done
    run_target.py  one target's triage and optimize run (the seam an executor replaces)
    retry.py       bounded retries of a failing target, then quarantine
    watch.py       new and changed sources (the daemon's rescans)
    daemon.py      one process per directory (lock), the heartbeat thread, sweep.log, signals
    ledger.py      sweep.db
    status.py      status.json and `rocm-perf status`
    display.py     progress on a terminal or as a plain log
    view.py        the read-only view of a sweep that the report renders
"""
