"""`isolate --kernel`'s rewrite of a Python expression for the capture runtimes
(isolate/kernel_pattern.py): what each construct becomes, and what is refused with its reason.
test_host_capture.py runs the rewritten patterns through the real host runtime."""

from __future__ import annotations

import re

import pytest

from rocm_perf.errors import RocmPerfError
from rocm_perf.isolate.kernel_pattern import runtime_pattern


@pytest.mark.parametrize("python, runtime", [
    ("stencil_2d", "stencil_2d"),
    (r"^scale\(float", r"^scale\(float"),
    (r"k\d+<\w>", "k[0-9]+<[[:alnum:]_]>"),
    (r"[\d_]x\s", "[0-9_]x[[:space:]]"),
    ("(?:a|b)c", "(a|b)c"),
    ("a.*?b+?c??d{2,3}?", "a.*b+c?d{2,3}"),
    ("f{x}", r"f\{x\}"),
    (r"a\<b\-c\.d", r"a<b-c\.d"),
    (r"\bk\B", r"\bk\B"),
])
def test_each_construct_becomes_its_posix_and_ecmascript_form(python, runtime):
    assert runtime_pattern(python) == runtime


@pytest.mark.parametrize("python, why", [
    ("(?P<k>scale)", "a group starting (?"), ("(?=a)b", "a group starting (?"), ("(?i)scale", "a group starting (?"),
    (r"(a)\1", r"the escape \1"), (r"\Ascale", r"the escape \A"), (r"[\]a]", r"the escape \] inside brackets"),
    ("[]a]", "a ']' first in brackets"), ("a*+", "a possessive quantifier"),
])
def test_what_a_runtime_cannot_read_is_refused_naming_it(python, why):
    re.compile(python)  # each is a valid Python expression
    with pytest.raises(RocmPerfError) as e:
        runtime_pattern(python)
    assert why in str(e.value) and repr(python) in str(e.value)


def test_a_pattern_python_cannot_read_is_named_as_such():
    with pytest.raises(RocmPerfError, match="not a regular expression"):
        runtime_pattern("scale(")
