"""Overnight sweeps: many targets, one time budget, resumable, and a watch mode (the daemon).

    rocm-perf sweep kernels/ --budget 8h            # every .cu in kernels/, 8 hours in all
    rocm-perf sweep --resume runs/sweep-...          # after kill -9, a reboot, or Ctrl-C
    rocm-perf sweep kernels/ sweep.toml --watch      # keep running; re-optimize what changes
    rocm-perf status runs/sweep-...                  # what it is doing right now
    rocm-perf sweep kernels/ --executor slurm --partition mi300x   # on a Slurm cluster

A sweep directory holds sweep.db (the sweep ledger: targets, status, budget spent, events),
sweep.lock (one process per sweep directory), status.json (the heartbeat `status` reads),
sweep.log, tasks/<id>-<kind>-<target>/ (what each task was asked, its progress and result),
triage/ (each target's first build and profile), runs/<target>/<run>/ (each target's
`rocm-perf optimize` run with its own ledger) and, with the slurm executor, slurm/ (submitit's).

The modules, in the order a sweep uses them:

    command.py     `rocm-perf sweep`: arguments, a new or resumed sweep directory, then Sweep.run
    targets.py     what to optimize: .cu files, folders of them, TOML manifests
    schedule.py    the settings, the budget, the order of targets and each one's share of time
    loop.py        Sweep: hand out triage, then optimize runs, until work or budget is done
    dispatch.py    the tasks: record, submit, take over after a kill, read their ends
    executor.py    the interface of what runs tasks; executor_inline.py (in this process),
                   executor_local.py (a worker process per device), executor_slurm.py (submitit)
    executor_settings.py  --executor and the manifest's [executor] table
    worker.py      one task's work, wherever it runs; task_files.py its directory
    run_target.py  one target's triage and optimize run
    retry.py       bounded retries of a failing target (tenacity's policies), then quarantine
    watch.py       new and changed sources (the daemon's rescans)
    daemon.py      one process per directory (lock), the heartbeat thread, sweep.log, signals
    ledger.py      sweep.db
    status.py      status.json and `rocm-perf status`
    display.py     progress on a terminal or as a plain log
    view.py        the read-only view of a sweep that the report renders
"""
