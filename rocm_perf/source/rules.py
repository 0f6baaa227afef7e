"""Rewrite rules as data: each file in rewrites/ is a jinja2 template of the rewritten loop with a
header in its leading `{# ... #}` comment:

    name: unroll_pragma
    description: what it does (one line)
    applies: when it applies, in words (one line)
    when: <jinja expression over `loop`> => <reason shown when it is false>   (repeatable)
    factors: 1, 2, 4, 8
    factor_when: <expression over `loop` and `factor`> => <reason>            (optional, repeatable)
    result_loops: 1        (loops the rewrite leaves where the one loop was; checked by a guard;
                            an expression over `loop` and `factor`)
    summary: <template over `loop` and `factor`>   (one line for a reviewer; optional)

The template renders the text that replaces the loop (from its unroll pragma, if any, to its
end). Templates, conditions and summaries may call `unroll_plan(loop, factor)` (unroll_plan.py:
the shape of a manual unroll, as simple as the analysis proves). Adding a rule is adding a file;
the engine knows no rule by name.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from rocm_perf.errors import RocmPerfError
from rocm_perf.source.loops import LoopInfo
from rocm_perf.source.unroll_plan import unroll_plan

RULE_SUFFIX = ".j2"
_HEADER = re.compile(r"\A\s*\{#(.*?)#\}\s*?\n?", re.DOTALL)
_LIST_KEYS = {"when", "factor_when"}
_REQUIRED = ("name", "description", "applies", "factors")

ENV = jinja2.Environment(
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=False,
    undefined=jinja2.StrictUndefined,
    autoescape=False,  # C++ source, not HTML
    extensions=["jinja2.ext.do"],
)
ENV.globals["unroll_plan"] = unroll_plan


@functools.cache
def _compiled(expression: str):
    return ENV.compile_expression(expression, undefined_to_none=False)


@functools.cache
def _text_template(source: str) -> jinja2.Template:
    return ENV.from_string(source)


@dataclass
class Condition:
    expression: str
    reason: str

    def holds(self, **context) -> bool:
        return bool(_compiled(self.expression)(**context))

    def explain(self, **context) -> str:
        return ENV.from_string(self.reason).render(**context)


@dataclass
class Rule:
    name: str
    description: str
    applies: str
    factors: list[int]
    when: list[Condition]
    factor_when: list[Condition]
    result_loops: str  # an expression over `loop` and `factor`
    path: Path
    template: jinja2.Template = field(repr=False)
    summary: str = ""  # a template over `loop` and `factor`

    def loops_left(self, loop: LoopInfo, factor: int) -> int:
        """How many loops the rewrite leaves where the loop was (the structure guard checks it)."""
        return int(_compiled(self.result_loops)(loop=loop, factor=factor))

    def describe(self, loop: LoopInfo, factor: int) -> str:
        """One line for a reviewer saying what the rewrite of this loop does."""
        if self.summary:
            return _text_template(self.summary).render(loop=loop, factor=factor).strip()
        what = loop.induction_var or loop.kind
        return f"{what} loop, line {loop.line}: {self.name} x{factor}"

    def reasons_not(self, loop: LoopInfo) -> list[str]:
        """Why the rule does not apply to this loop ([] when it does)."""
        return [c.explain(loop=loop) for c in self.when if not c.holds(loop=loop)]

    def factor_reasons_not(self, loop: LoopInfo, factor: int) -> list[str]:
        if factor not in self.factors:
            return [f"factor {factor} is not one of {self.factors}"]
        return [c.explain(loop=loop, factor=factor) for c in self.factor_when if not c.holds(loop=loop, factor=factor)]

    def factors_for(self, loop: LoopInfo) -> list[int]:
        if self.reasons_not(loop):
            return []
        return [f for f in self.factors if not self.factor_reasons_not(loop, f)]

    def to_json(self) -> dict:
        return {"name": self.name, "description": self.description, "applies": self.applies,
                "factors": self.factors, "result_loops": self.result_loops, "path": str(self.path)}  # fmt: skip


def default_rules_dir() -> Path:
    """$ROCM_PERF_RULES_DIR, else the checkout's rewrites/ (where users read and edit the rules; an
    editable install runs from it), else the copy shipped in the package (`rocm_perf/rewrites/`)."""
    env = os.environ.get("ROCM_PERF_RULES_DIR")
    if env:
        return Path(env)
    package = Path(__file__).resolve().parents[1]
    checkout = package.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "rewrites").is_dir():
        return checkout / "rewrites"
    return package / "rewrites"


def _condition(path: Path, value: str) -> Condition:
    expression, sep, reason = value.partition("=>")
    if not sep:
        raise RocmPerfError(f"{path}: condition {value!r} needs `=> reason`")
    try:
        ENV.compile_expression(expression.strip())
    except jinja2.TemplateSyntaxError as e:
        raise RocmPerfError(f"{path}: condition {expression.strip()!r}: {e.message}") from None
    return Condition(expression.strip(), reason.strip())


def parse_rule(path: Path) -> Rule:
    """One rule file: its header and its template."""
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read rule: {e.strerror}") from None
    match = _HEADER.match(source)
    if not match:
        raise RocmPerfError(f"{path}: a rule starts with a {{# ... #}} header (name, description, applies, factors)")
    header: dict[str, list[str]] = {}
    for line in match.group(1).splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip().replace("_", "").isalnum():
            raise RocmPerfError(f"{path}: header line {line.strip()!r} is not `key: value`")
        header.setdefault(key.strip(), []).append(value.strip())
    missing = [k for k in _REQUIRED if k not in header]
    if missing:
        raise RocmPerfError(f"{path}: rule header lacks {', '.join(missing)}")
    for key, values in header.items():
        if len(values) > 1 and key not in _LIST_KEYS:
            raise RocmPerfError(f"{path}: header key {key!r} given {len(values)} times")
    try:
        factors = [int(f) for f in header["factors"][0].split(",")]
        result_loops = header.get("result_loops", ["1"])[0]
        ENV.compile_expression(result_loops)
        summary = header.get("summary", [""])[0]
        ENV.from_string(summary)
        template = ENV.from_string(source[match.end() :])
    except ValueError as e:
        raise RocmPerfError(f"{path}: {e}") from None
    except jinja2.TemplateSyntaxError as e:
        raise RocmPerfError(f"{path}:{e.lineno}: template error: {e.message}") from None
    return Rule(
        name=header["name"][0],
        description=header["description"][0],
        applies=header["applies"][0],
        factors=factors,
        when=[_condition(path, v) for v in header.get("when", [])],
        factor_when=[_condition(path, v) for v in header.get("factor_when", [])],
        result_loops=result_loops,
        path=path,
        template=template,
        summary=summary,
    )


def load_rules(rules_dir: Path | None = None) -> list[Rule]:
    """Every `*.j2` rule in the directory (default: the repo's rewrites/, or $ROCM_PERF_RULES_DIR)."""
    directory = Path(rules_dir) if rules_dir is not None else default_rules_dir()
    if not directory.is_dir():
        raise RocmPerfError(f"{directory}: no rules directory (set ROCM_PERF_RULES_DIR or --rules-dir to a folder of *.j2 rules)")
    rules = [parse_rule(p) for p in sorted(directory.glob(f"*{RULE_SUFFIX}"))]
    names = [r.name for r in rules]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise RocmPerfError(f"{directory}: rule names used twice: {', '.join(duplicates)}")
    return rules


def find_rule(rules: list[Rule], name: str) -> Rule:
    for rule in rules:
        if rule.name == name:
            return rule
    raise RocmPerfError(f"no rule {name!r} (rules: {', '.join(r.name for r in rules) or 'none'})")


def applicable_rules(loop: LoopInfo, rules: list[Rule]) -> list[tuple[Rule, list[int]]]:
    """The rules that apply to a loop, each with the factors it may use there."""
    found = []
    for rule in rules:
        factors = rule.factors_for(loop)
        if factors:
            found.append((rule, factors))
    return found
