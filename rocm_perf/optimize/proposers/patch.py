"""The user's own changes as candidates: unified diffs (`rocm-perf try --patch FILE.diff`) and whole
second versions of the file (`--variant OTHER.cu`), each one candidate of one group of
alternatives (at most one of them is accepted; they race each other with the family-wise error held,
as a loop's rules do).

The changes are recorded in the ledger when the run starts (`patch_candidates`: name, kind, the
file it changes, its sha256, the diff's text or the variant's copy in the run), so that a resumed
run tries the very same ones. A candidate's provenance names its file, sha256 and diff. Its guards
(source/scope.py) say what a hand-written change may touch: it applies cleanly (the hunk and line
where it does not), it parses, every kernel keeps its launch ABI, and only device code changes
(unless --allow-host-changes, and then its verdict says correctness rests on the outputs alone).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.ledger import Baseline, Trial
from rocm_perf.tolerance import BIT_IDENTICAL
from rocm_perf.optimize.plan import Proposal
from rocm_perf.optimize.proposers.base import GuardSet, Planned, Proposer, Rendered
from rocm_perf.source.rewrite import unified_diff
from rocm_perf.source.patch_apply import apply_patch, parse_patch
from rocm_perf.source.scope import PATCH_GUARD_NAMES, changed_kernels, guard_patch

# `ctx` below is the run's optimize/run_context.RunContext (not imported: the context builds the
# run's proposers, so the annotation stays a name).

GROUP = "patch"  # every patch and variant of a run is an alternative of the others
CANDIDATES_KEY = "patch_candidates"  # the ledger's record of them
_FLOOR = 1e-3  # a change to no ranked kernel still races: the race decides


class Patches(Proposer):
    """The run's patches and variants (`candidates`, as the ledger records them)."""

    name = "patch"
    guards = GuardSet(source=PATCH_GUARD_NAMES)

    def __init__(self, candidates: list[dict] | None = None, *, outputs: str = BIT_IDENTICAL,
                 allow_host_changes: bool = False):
        self.candidates = list(candidates or [])
        self.guards = GuardSet(source=PATCH_GUARD_NAMES, outputs=outputs)
        self.allow_host_changes = allow_host_changes

    @classmethod
    def for_run(cls, options, ledger) -> "Patches":
        return cls(ledger.get(CANDIDATES_KEY) or [], outputs=options.tolerance or BIT_IDENTICAL,
                   allow_host_changes=options.allow_host_changes)

    def plan(self, ctx: "RunContext", base: Baseline, tried: set[str]) -> list[Planned]:
        if GROUP in tried or not self.candidates:
            return []
        shares = {r["kernel"]: float(r["cp_share"]) for r in ctx.ledger.get("ranking", []) if r.get("kernel")}
        planned = []
        for i, c in enumerate(self.candidates):
            path = ctx.source_of(base, c["file"])
            before = path.read_bytes()
            try:
                after = self._changed(ctx, c, before)
                kernels = changed_kernels(before, after, path, ctx.flags_of(path))
            except RocmPerfError:
                kernels = []  # render says why it does not apply
            share = sum(shares.get(k, 0.0) for k in kernels)
            # The evidence before it is built: the critical-path share of the kernels it changes; ties in
            # the order given.
            factors = {"critical-path share of its kernels": max(share, _FLOOR), "order given": 1.0 - i * 1e-6}
            value = factors["critical-path share of its kernels"] * factors["order given"]
            proposal = Proposal(GROUP, ",".join(kernels), c["name"], c["kind"], 0, value, factors=factors)
            planned.append(Planned(c["file"], proposal, provenance=self.provenance(c, before, ctx)))
        return planned

    def provenance(self, c: dict, before: bytes, ctx: "RunContext") -> dict:
        """What the ledger keeps of where the candidate came from: its file, sha256 and diff."""
        label = f"{c['kind']} {c['name']}"
        diff = c.get("text", "")
        if c["kind"] == "variant":
            diff = unified_diff(Path(self._shown_name(ctx, c)), before, ctx.abs(c["path"]).read_bytes())
        return {"kind": c["kind"], "file": c["name"], "sha256": c["sha256"], "diff": diff, "label": label}

    def render(self, ctx: "RunContext", trial: Trial, base_path: Path) -> Rendered:
        c = next((c for c in self.candidates if c["name"] == trial.loop_id), None)
        if c is None:
            return Rendered(error=f"{trial.loop_id}: not one of the run's patches")
        before = base_path.read_bytes()
        try:
            after = self._changed(ctx, c, before)
        except RocmPerfError as e:
            return Rendered(error=str(e))
        diff = unified_diff(Path(self._shown_name(ctx, c)), before, after)
        verdicts = guard_patch(base_path, before, after, ctx.flags_of(base_path), allow_host_changes=self.allow_host_changes)
        failed = [v.reason for v in verdicts if not v.ok]
        notes = [v.reason for v in verdicts if v.ok and v.name == "device_code_only" and v.reason.startswith("host code changed")]
        return Rendered(after, diff, failed=failed, notes=notes)

    def _changed(self, ctx: "RunContext", c: dict, before: bytes) -> bytes:
        """The candidate's version of the file whose bytes are `before` (RocmPerfError: the patch does not apply)."""
        if c["kind"] == "variant":
            return ctx.abs(c["path"]).read_bytes()
        return apply_patch(parse_patch(c["text"].encode("utf-8", "surrogateescape"), c["name"]), before,
                           self._shown_name(ctx, c))

    @staticmethod
    def _shown_name(ctx: "RunContext", c: dict) -> str:
        """The file as the user knows it: a project's relative path, or the source's own name."""
        return c["file"] or Path(ctx.ledger.get("source_path") or "source.cu").name


def patch_record(name: str, text: bytes, rel: str) -> dict:
    """A patch as the ledger's `patch_candidates` keeps it."""
    return {"kind": "patch", "name": name, "file": rel, "sha256": hashlib.sha256(text).hexdigest(),
            "text": text.decode("utf-8", "surrogateescape")}


def variant_record(name: str, data: bytes, stored: str) -> dict:
    """A variant as the ledger keeps it: its copy in the run directory (`stored`, relative to it)."""
    return {"kind": "variant", "name": name, "file": "", "sha256": hashlib.sha256(data).hexdigest(), "path": stored}
