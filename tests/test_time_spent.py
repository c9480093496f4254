"""Where a run's time went (evalgate.reports.time_spent): the terminal summary's last lines and
the PR comment's footer, from results.json's run.agent and run.judge."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evalgate import i18n
from evalgate.reports import time_spent
from evalgate.reports.markdown import render_comment
from evalgate.reports.terminal import summary_table
from evalgate.results import RunInfo

from test_markdown import scenario_fail

AGENT = {
    "seconds": 6.2,
    "concurrency": 16,
    "shared_slots": 16,
    "waited_s": 41.5,
    "suites": {"home": {"case_runs": 60, "failed": 0, "duration_s": 38.0, "retried": 2}, "travel": {"case_runs": 3, "failed": 0, "duration_s": 2.5}},
    "backoff_s": 1.5,
}
JUDGE = {"requests_s": 54.3, "slot_wait_s": 12.0, "rate_wait_s": 0.0, "backoff_s": 0.0, "concurrency": 8}


def _current(agent=None, judge=None):
    comparison, current = scenario_fail()
    info = current.run.model_copy(update={"agent": agent or {}, "judge": judge or {}, "duration_seconds": 1.4})
    return comparison, current.model_copy(update={"run": info})


def test_the_summary_and_the_comment_say_where_the_time_went():
    comparison, current = _current(AGENT, JUDGE)
    lines = time_spent(current.run)
    assert lines == [
        "Where the time went, added up over what ran at once: case runs 39.0 s, judge requests 54.3 s, "
        "waiting for a free slot 53.5 s, backing off after 429 and 5xx answers 1.5 s",
        "Most of the waiting was case runs waiting for a free slot: raising agent.concurrency (now 16) would shorten the run, "
        "if the model's quota allows.",
    ]
    summary = summary_table(current, color=False)
    assert summary.rstrip("\n").split("\n")[-2:] == lines
    comment = render_comment(comparison, current)
    footer = next(line for line in comment.splitlines() if line.startswith("Run time"))
    # Markdown-escaped in the footer, one item of it each.
    assert "Where the time went, added up over what ran at once: case runs 39.0 s" in footer
    assert "raising agent.concurrency (now 16)" in footer.replace("\\", "")


@pytest.mark.parametrize(
    "judge, advice",
    [
        ({**JUDGE, "slot_wait_s": 90.0}, "raising judge.concurrency (now 8)"),
        ({**JUDGE, "rate_wait_s": 95.0}, "Most of the waiting was for judge.rpm"),
        ({**JUDGE, "backoff_s": 99.0}, "the model's quota or service is the limit"),
    ],
)
def test_the_advice_names_what_to_raise(judge, advice):
    _comparison, current = _current(AGENT, judge)
    assert advice in time_spent(current.run)[-1]


def test_no_advice_when_little_was_waited_and_nothing_without_an_agent_or_judge():
    _comparison, current = _current({**AGENT, "waited_s": 0.4, "backoff_s": 0.0}, {**JUDGE, "slot_wait_s": 0.2})
    assert time_spent(current.run) == ["Where the time went, added up over what ran at once: case runs 40.5 s, judge requests 54.3 s, waiting for a free slot 0.6 s"]
    _comparison, current = _current()
    assert time_spent(current.run) == []
    assert "Where the time went" not in summary_table(current, color=False)


@pytest.mark.parametrize("code, words", [("ko", ("시간", "agent.concurrency")), ("ja", ("時間", "agent.concurrency"))])
def test_the_lines_are_translated(code, words):
    _comparison, current = _current(AGENT, JUDGE)
    with i18n.language(code):
        lines = time_spent(current.run)
    assert not any(line.startswith("Where the time went") for line in lines)
    assert all(w in "\n".join(lines) for w in words), lines
