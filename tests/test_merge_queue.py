"""The merge queue: on `merge_group` events the action gates the queue's head commit against its
base's baseline, under the base's policy, and sets the status the queue waits for on that commit."""

from __future__ import annotations

import pytest

from test_entrypoint import PR, _set_outputs, _writes, action, main_with_baseline, ws  # noqa: F401  (fixtures)
from fake_github import fake_github  # noqa: F401  (fixture)


def _merge_group(head: str, base: str) -> dict:
    """GitHub's merge_group payload (action checks_requested)."""
    return {
        "action": "checks_requested",
        "merge_group": {
            "head_sha": head,
            "head_ref": f"refs/heads/gh-readonly-queue/main/pr-{PR}-{base}",
            "base_sha": base,
            "base_ref": "refs/heads/main",
            "head_commit": {"id": head, "tree_id": "0" * 40, "message": "Merge pull request #7", "timestamp": "2026-11-26T06:00:00Z",
                            "author": {"name": "t", "email": "t@t"}, "committer": {"name": "t", "email": "t@t"}},
        },
        "repository": {"full_name": "octo/hello", "default_branch": "main"},
    }


@pytest.fixture
def main_branch(action):
    """main's commit carries the config in its tree and has a baseline."""
    return main_with_baseline(action)


def _queue(action, base: str) -> tuple[str, int]:
    fake = action.fake
    head = fake.add_commit([base], "merge group", files={"evalgate.yaml": (action.ws / "evalgate.yaml").read_bytes()})
    group = _merge_group(head, base)
    code = action("merge_group", group, sha=head, ref=group["merge_group"]["head_ref"])
    return head, code


def test_a_regression_in_the_queue_fails_the_status_on_its_head_commit(action, main_branch):
    fake = action.fake
    _set_outputs(action.ws, regressed=True)
    head, code = _queue(action, main_branch)
    assert code == 1, action.stdout
    assert [(s["context"], s["state"]) for s in fake.statuses[head]] == [("evalgate", "failure")]
    assert fake.statuses[head][0]["target_url"] == f"https://github.com/octo/hello/actions/runs/{1000 + action.n}"
    assert not fake.comments  # a merge group has no pull request to comment on
    assert _writes(fake) == [f"POST /repos/octo/hello/statuses/{head}"]
    assert fake.requests("GET", rf"/repos/octo/hello/contents/baselines/evalgate/{main_branch}\.json\.gz")  # the base's baseline
    assert action.outputs["activity"] == "merge_group" and action.outputs["verdict"] == "FAIL"
    assert action.outputs["comment-url"] == "" and action.outputs["regressions"] == "1"
    assert "lights-en" in action.summary and f"Baseline: {main_branch[:12]}" in action.summary


def test_an_unchanged_queue_passes_and_mode_pr_gates_it_too(action, main_branch):
    head, code = _queue(action, main_branch)
    assert code == 0, action.stdout
    assert [s["state"] for s in action.fake.statuses[head]] == ["success"]
    head2 = action.fake.add_commit([main_branch], "another group")
    group = _merge_group(head2, main_branch)
    assert action("merge_group", group, sha=head2, ref=group["merge_group"]["head_ref"], mode="pr") == 0, action.stdout
    assert action.outputs["activity"] == "merge_group"
    assert [s["state"] for s in action.fake.statuses[head2]] == ["success"]
    assert not action.fake.comments


def test_the_nearest_ancestor_baseline_serves_a_base_whose_own_is_not_saved_yet(action, main_branch):
    """main moved on and its baseline job is still running: the queue compares with the one before."""
    fake = action.fake
    newer = fake.add_commit([main_branch], "main moved", files={"evalgate.yaml": (action.ws / "evalgate.yaml").read_bytes()})
    _set_outputs(action.ws, regressed=True)
    head, code = _queue(action, newer)
    assert code == 1, action.stdout
    assert [s["state"] for s in fake.statuses[head]] == ["failure"]
    assert f"Baseline from ancestor {main_branch[:12]}, 1 commit before the base {newer[:12]}" in action.summary


def test_a_queued_change_that_loosens_the_gate_is_judged_by_the_base(action, main_branch):
    config = action.ws / "evalgate.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("  deterministic_flips: fail\n", "  deterministic_flips: test\n  margin_deterministic: 1.0\n"), encoding="utf-8")
    _set_outputs(action.ws, regressed=True)
    head, code = _queue(action, main_branch)
    assert code == 1, action.stdout
    assert [s["state"] for s in action.fake.statuses[head]] == ["failure"]
    assert "This pull request changes the gate" in action.summary and "+  deterministic_flips: test" in action.summary
    assert not action.fake.comments


def test_a_merge_group_payload_without_shas_is_an_input_error(action, main_branch):
    code = action("merge_group", {"action": "checks_requested", "merge_group": {"head_ref": "refs/heads/x"}}, sha=main_branch)
    assert code == 2
    assert "merge_group" in action.stdout and "head_sha and base_sha" in action.stdout
    assert _writes(action.fake) == []
