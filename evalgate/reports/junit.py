"""JUnit XML for CI test reporters: one testsuite per suite, one testcase per eval case."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

from evalgate.reports import format_scores, not_evaluated_reasons, reason_text
from evalgate.results import CaseResult, CriterionResult, InvocationSummary, RunResults, Status, SuiteResult

# Characters XML 1.0 cannot carry (C0 controls but tab/newline/CR, lone surrogates,
# U+FFFE/U+FFFF), plus DEL and the C1 controls, which it can but which no reader wants.
_NOT_XML = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("", text)


def _element(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    el = ET.SubElement(parent, tag, {k: _clean(v) for k, v in attrs.items()})
    if text:
        el.text = _clean(text)
    return el


def failure_message(case: CaseResult) -> str:
    """Which criteria failed, with score and threshold: `tool_trajectory_avg_score 0.50 < 1.00`."""
    parts = []
    for name, crit in case.criteria.items():
        if crit.status is Status.FAILED and crit.score is not None:
            score, threshold = format_scores(crit.score, crit.threshold)
            parts.append(f"{name} {score} < {threshold}")
    return "; ".join(parts)


def _criterion_lines(name: str, crit: CriterionResult) -> list[str]:
    if crit.score is None:
        head = f"{name}: not evaluated (threshold {crit.threshold:.2f})"
    else:
        score, threshold = format_scores(crit.score, crit.threshold)
        head = f"{name}: {score} {'>=' if crit.score >= crit.threshold else '<'} {threshold} {crit.status.value}"
    lines = [head]
    if crit.error and not crit.per_invocation:  # else the invocation lines say it
        lines.append(f"  {crit.error}")
    for i, inv in enumerate(crit.per_invocation):
        if inv.score is None:
            lines.append(f"  turn {i + 1}: not evaluated ({inv.error or 'no reason given'})")
        else:
            lines.append(f"  turn {i + 1}: {format_scores(inv.score, crit.threshold)[0]} {inv.status.value}")
    return lines


_TOOLS_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True)  # built once, not once a call


def _tools(tools: list[dict[str, Any]]) -> str:
    return _TOOLS_JSON.encode(tools) if tools else "(none)"


def _invocation_lines(i: int, inv: InvocationSummary) -> list[str]:
    lines = [f"turn {i + 1}", f"  user: {inv.user}"]
    if inv.expected_response is not None:
        lines.append(f"  expected response: {inv.expected_response}")
    lines.append(f"  actual response: {inv.actual_response}")
    if inv.expected_tools is not None:
        lines.append(f"  expected tools: {_tools(inv.expected_tools)}")
    lines.append(f"  actual tools: {_tools(inv.actual_tools)}")
    return lines


def case_details(case: CaseResult) -> str:
    """Per-criterion and per-invocation scores, then the conversation: the body of a failure."""
    lines: list[str] = []
    for name, crit in case.criteria.items():
        lines.extend(_criterion_lines(name, crit))
    for i, inv in enumerate(case.invocations):
        lines.extend(_invocation_lines(i, inv))
    return "\n".join(lines)


def agent_logs_text(case: CaseResult) -> str:
    """A case's captured agent output, each run's under a heading when there are several."""
    logs = case.agent_logs
    if len(logs) == 1 and logs[0].run == 1:
        return logs[0].text
    return "\n".join(f"--- run {log.run} ---\n{log.text}" for log in logs)


def _testsuite(root: ET.Element, suite: SuiteResult) -> None:
    # A NOT_EVALUATED case is an error when the suite's policy fails the gate on it, or when
    # nothing in the suite was evaluated (its agent never ran), so a CI reporter shows red
    # exactly when the gate does; otherwise it is skipped.
    red = suite.not_evaluated_policy == "fail" or suite.status is Status.NOT_EVALUATED
    not_evaluated_tag = "error" if red else "skipped"
    counts = {"failure": 0, "error": 0, "skipped": 0}
    for case in suite.cases:
        if case.status is Status.FAILED:
            counts["failure"] += 1
        elif case.status is Status.NOT_EVALUATED:
            counts[not_evaluated_tag] += 1
    ts = _element(
        root,
        "testsuite",
        name=suite.name,
        tests=str(len(suite.cases)),
        failures=str(counts["failure"]),
        errors=str(counts["error"]),
        skipped=str(counts["skipped"]),
    )
    for case in suite.cases:
        tc = _element(ts, "testcase", classname=f"{suite.name}.{case.eval_set_id}", name=case.eval_id)
        if case.status is Status.FAILED:
            _element(tc, "failure", case_details(case), message=failure_message(case), type="FAILED")
        elif case.status is Status.NOT_EVALUATED:
            reasons = [reason_text(r, names) for r, names in not_evaluated_reasons(case).items()]
            _element(tc, not_evaluated_tag, case_details(case), message="; ".join(reasons), type="NOT_EVALUATED")
        if case.agent_logs:  # what the agent wrote while the case ran, where CI reporters show a test's output
            _element(tc, "system-out", agent_logs_text(case))
    if suite.warnings:
        _element(ts, "system-out", "\n".join(f"warning: {w}" for w in suite.warnings))


def junit_xml(results: RunResults) -> str:
    """The run as a JUnit XML document (UTF-8, with declaration; no timestamps)."""
    root = ET.Element("testsuites", {"name": "evalgate"})
    for suite in results.suites:
        _testsuite(root, suite)
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(sum(int(ts.get(key, "0")) for ts in root)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
