"""report/json_text.py: the commands' JSON written by msgspec is the text json.dumps(indent=2) writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA

from rocm_perf.analysis.critical_path import analyze_critical_path
from rocm_perf.report.critical_path_report import result_json
from rocm_perf.report.json_text import json_text
from rocm_perf.report.summary import build_summary, summary_json
from rocm_perf.trace.load import load_trace

MULTISTREAM = DATA / "rocpd_v3_multistream.db"


def test_a_critical_path_document_is_the_standard_librarys_text():
    trace = load_trace(MULTISTREAM)
    doc = result_json(analyze_critical_path(trace, with_edges=False), trace)
    assert json_text(doc, default=None) == json.dumps(doc, indent=2)


def test_a_summary_document_is_the_standard_librarys_text():
    doc = summary_json(build_summary(load_trace(MULTISTREAM)))
    assert json_text(doc) == json.dumps(doc, indent=2, default=str)


def test_non_ascii_is_escaped_as_json_does_and_default_turns_unknown_values():
    doc = {"name": "kern\u00e9l \U0001f600 \u2028", "path": Path("/x/y"), "count": np.int64(3),
           "nested": [{"a": None, "b": True, "t": (1, 2)}], "s": "\"\\\n\t\x01", 7: "int key"}
    assert json_text(doc) == json.dumps(doc, indent=2, default=str)
    assert json_text(doc).isascii()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), np.float64(1.5)])
def test_non_finite_and_numpy_floats_are_written_as_json_writes_them(value):
    # compare's open confidence intervals print as Infinity, and the MCP tools repeat that word
    doc = {"interval": [0.5, value], "rows": [{"x": 1.0}] * 3}
    assert json_text(doc) == json.dumps(doc, indent=2, default=str)


@pytest.mark.parametrize("doc", [{"big": 2**70}, {None: 1}, {True: 2}, {"in": {None: [1]}}])
def test_what_msgspec_does_not_take_is_written_by_the_standard_library(doc):
    assert json_text(doc) == json.dumps(doc, indent=2, default=str)


def test_what_neither_takes_is_refused_as_json_refuses_it():
    with pytest.raises(TypeError):
        json_text({(1, 2): 3})
    with pytest.raises(TypeError):
        json_text({"a": object()}, default=None)
