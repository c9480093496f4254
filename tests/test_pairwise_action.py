"""gate.pairwise end to end: the Action's PR mode in-process, the fake GitHub and a fake Gemini judge at the wire."""

from __future__ import annotations

import json

import pytest

from fake_gemini import fake_gemini  # noqa: F401  (fixture)
from fake_github import fake_github  # noqa: F401  (fixture)
from pairwise_judges import answers
from test_entrypoint import PR, Action, _lines, _pull_request, _push
from test_inputs import CONFIG as BASE_CONFIG
from test_inputs import make_project

CONFIG = BASE_CONFIG + "gate:\n  pairwise:\n    enabled: true\n"
DETAILS = ("bedroom", "거실")


@pytest.fixture
def ws(tmp_path):
    return make_project(tmp_path / "ws", config=CONFIG)


@pytest.fixture
def action(fake_github, ws, tmp_path, capsys):  # noqa: F811
    return Action(fake_github, ws, tmp_path, capsys)


def _room_judge(body):
    """Prefers the answer that names the room; equal when both (or neither) do."""
    a = answers(body)
    named = {k: sum(d in v for d in DETAILS) for k, v in a.items()}
    if named["A"] == named["B"]:
        return {"reason": "Both say the same.", "better": "equal"}
    better = "A" if named["A"] > named["B"] else "B"
    return {"reason": f"Answer {better} says which room (방 이름을 말합니다).", "better": better}


def _pr_outputs(ws) -> None:
    lines = _lines(False, "lights-en", "bedroom")
    answers_now = {"lights-en": "Done: the bedroom light is now off.", "난방-ko": "난방을 켰습니다."}  # a paraphrase; a dropped room
    for line in lines:
        line["invocations"][0]["final_response"]["parts"][0]["text"] = answers_now[line["eval_id"]]
    (ws / "runs" / "out.jsonl").write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")


def test_the_pr_comment_shows_the_side_by_side_row_and_a_loss_with_both_answers(action, fake_gemini, monkeypatch):  # noqa: F811
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _room_judge
    fake = action.fake
    base = fake.linear_history(2)[1]
    assert action("push", _push(base), sha=base) == 0, action.stdout
    assert fake_gemini.requests == []  # a push saves the baseline; nothing to judge side by side

    head = fake.add_commit([base], "PR head")
    _pr_outputs(action.ws)
    action("pull_request", _pull_request(head, base), sha=fake.add_commit([base, head]), ref=f"refs/pull/{PR}/merge")
    assert len(fake_gemini.requests) == 6  # 2 changed invocations, both orders; the unanimous loss once more (confirm)
    [comment] = fake.issue_comments(PR)
    body = comment["body"]
    assert "| judged side by side (judge, both orders) | – | 2 | – | – | 1 of 2 changed answers worse than the baseline's, 0 better, 1 equal" in body
    assert "### Worse than the baseline, judged side by side (1)" in body
    losses = body[body.index("### Worse than the baseline"):]
    assert "거실 난방을 켰습니다." in losses and "난방을 켰습니다." in losses, losses  # both answers
    assert "방 이름을 말합니다" in body  # the judge's reason
    assert "| side by side | 6 |" in body  # judge usage, per suite
    page = (action.ws / "evalgate-results" / "report.html").read_text(encoding="utf-8")
    assert '"pw":{' in page and '"o":"loss"' in page and '"o":"tie"' in page

    # The same pull request again (a rerun): its first run's verdicts are in the cache, but a
    # pull request run believes only entries written by default-branch runs (cache
    # provenance: a job that ran the pull request's code could have written them), so the
    # judge is asked again. `evalgate compare` reruns are free (tests/test_pairwise.py).
    fake_gemini.reset()
    action("pull_request", _pull_request(head, base), sha=fake.add_commit([base, head]), ref=f"refs/pull/{PR}/merge")
    assert len(fake_gemini.requests) == 6
    [again] = fake.issue_comments(PR)
    assert "1 of 2 changed answers worse than the baseline's" in again["body"]
    assert "| side by side | 6 |" in again["body"]
