"""Source analysis and guarded loop rewrites through libclang.

Public entry points (the optimizer codes against these):
  analyze_source(path, flags) -> SourceAnalysis (.kernels, .loops, .warnings)
  match_kernel(profiled_name, analysis) -> KernelInfo | None
  load_rules(rules_dir=None) -> list[Rule]            (default: the repo's rewrites/)
  applicable_rules(loop, rules) -> list[(Rule, factors)]
  make_candidate(path, analysis, loop_id, rule_name, factor) -> Candidate
  guard_candidate(candidate, flags) -> list[GuardVerdict]
Loop ids are "KERNEL:FUNCTION:ORDINAL:LINE" (see loops.py).
"""

from rocm_perf.source.analysis import SourceAnalysis, analyze_bytes, analyze_source
from rocm_perf.source.guards import GuardVerdict, guard_candidate
from rocm_perf.source.kernels import KernelInfo
from rocm_perf.source.loops import LoopFlags, LoopInfo
from rocm_perf.source.names import match_kernel
from rocm_perf.source.rewrite import Candidate, make_candidate
from rocm_perf.source.rules import Rule, applicable_rules, load_rules

__all__ = [
    "Candidate",
    "GuardVerdict",
    "KernelInfo",
    "LoopFlags",
    "LoopInfo",
    "Rule",
    "SourceAnalysis",
    "analyze_bytes",
    "analyze_source",
    "applicable_rules",
    "guard_candidate",
    "load_rules",
    "make_candidate",
    "match_kernel",
]
