"""Interop with agents-cli's results files, against the real peer (google-agents-cli 1.11.0).

- A `results_<ts>.json` that `agents-cli eval grade` wrote (run here in a subprocess, on a
  traces file, with a local `custom_function_file` metric) becomes a baseline through
  `evalgate baseline import --agents-cli`: the stored scores are the file's, case by case
  (ids from `eval_case_id`, else the index), its errored result NOT_EVALUATED with
  agents-cli's error message; then `evalgate gate` against it PASSes when the pull request's
  answers score the same and FAILs when they regress.
- The agents-cli results file evalgate writes beside results.json is read by `agents-cli eval
  compare` (its summary equals agents-cli's own on the same answers, and a regression shows
  in the diff) and by `agents-cli eval analyze`, whose request to the eval service (a fake on
  127.0.0.1) carries our per-case scores.

The suite scores the same rule on evalgate's side with an ADK custom metric of the same
name (both functions are in one file): the agents-cli eval_config.yaml criteria are another
helper's work, and this test needs only that the two runs score alike.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import yaml

import fake_http
from fake_gemini import _throwaway_private_key

pytest.importorskip("google.agents.cli")
pytest.importorskip("google.adk")

PEER = Path(__file__).with_name("acli_peer.py")
SHA = "0123456789abcdef0123456789abcdef01234567"
METRIC = "keyword_hit"

METRICS_PY = '''\
"""One rule, twice: agents-cli's evaluate(instance) and an ADK custom metric."""


def _text(content):
    return "".join(p.get("text") or "" for p in (content or {}).get("parts") or [])


def share(response, reference):
    """The share of the reference's words that the response contains."""
    words = reference.split()
    return sum(w in response for w in words) / len(words) if words else 0.0


def evaluate(instance):
    reference = _text(instance["reference"]["response"])
    return {"score": share(_text(instance["response"]), reference), "explanation": "참조: " + reference}


def keyword_hit(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    from google.adk.evaluation.eval_metrics import EvalStatus
    from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult

    threshold = eval_metric.criterion.threshold
    per = []
    for actual, expected in zip(actual_invocations, expected_invocations):
        score = share(actual.final_response.parts[0].text, expected.final_response.parts[0].text)
        status = EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED
        per.append(PerInvocationResult(actual_invocation=actual, expected_invocation=expected, score=score, eval_status=status))
    overall = sum(p.score for p in per) / len(per)
    return EvaluationResult(
        overall_score=overall,
        overall_eval_status=EvalStatus.PASSED if overall >= threshold else EvalStatus.FAILED,
        per_invocation_results=per,
    )
'''

# (eval_case_id or None: keyed by its index, question, reference, the agent's answer)
CASES = [
    ("서울_날씨", "서울 날씨 어때요?", "서울 맑음 20도", "서울은 맑음, 20도입니다."),
    (None, "東京の天気は?", "東京 雨", "東京は雨です。"),
    ("부산_날씨", "부산 날씨는?", "부산 흐림 18도", "부산은 흐림, 18도예요."),
    ("大阪_天気", "大阪の天気は?", "大阪 晴れ", "大阪は晴れです。"),
    ("인사", "안녕하세요", "안녕하세요 도와 드릴까요", "안녕하세요! 무엇을 도와 드릴까요?"),
    ("挨拶", "こんにちは", None, "こんにちは!何をお手伝いしましょうか?"),  # no reference: the metric errs on both sides
    ("제주_날씨", "제주 날씨?", "제주 바람 비", "제주는 바람이 붑니다."),  # 2 of 3 words
    ("환불", "환불하고 싶어요", "주문 번호 알려 주세요", "주문 번호를 알려 주세요."),
    ("返品", "返品したいです", "注文 番号", "注文番号を教えてください。"),
    ("배송", "배송 언제 와요?", "내일 도착", "내일 도착 예정입니다."),
    ("配送", "いつ届きますか?", "明日 到着", "明日到着の予定です。"),
    ("영업시간", "몇 시에 열어요?", "오전 9시", "오전 9시에 엽니다."),
    ("営業時間", "何時に開きますか?", "午前 9時", "午前9時に開きます。"),
    ("결제", "카드 돼요?", "카드 결제 가능", "네, 카드 결제 가능합니다."),
]
REGRESSED = "잘 모르겠습니다. わかりません。"


def _content(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"text": text}]}


def _ids() -> list[str]:
    return [cid if cid else str(i) for i, (cid, *_rest) in enumerate(CASES)]


def _outputs(answer=None) -> str:
    lines = []
    for eid, (_cid, question, _ref, ans) in zip(_ids(), CASES):
        inv = {"invocation_id": "t0", "user_content": _content("user", question), "final_response": _content("model", answer or ans)}
        lines.append(json.dumps({"eval_set_id": "basic-dataset", "eval_id": eid, "invocations": [inv]}, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def make_project(root: Path) -> Path:
    """An evalgate project whose suite `app` holds CASES as eval set `basic-dataset`, with
    recorded answers, and the agents-cli files for the same cases: traces.json (as `eval
    generate` writes them) and eval_config.yaml."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "keyword_metrics.py").write_text(METRICS_PY, encoding="utf-8")
    traces, cases = [], []
    for eid, (cid, question, ref, ans) in zip(_ids(), CASES):
        trace = {"prompt": _content("user", question), "responses": [{"response": _content("model", ans)}],
                 "agent_data": {"turns": [{"turn_index": 0, "turn_id": "turn_0", "events": [{"author": "app", "content": _content("model", ans)}]}]}}
        turn = {"invocation_id": "t0", "user_content": _content("user", question)}
        if ref is not None:
            trace["reference"] = {"response": _content("model", ref)}
            turn["final_response"] = _content("model", ref)
        if cid:
            trace = {"eval_case_id": cid, **trace}
        traces.append(trace)
        cases.append({"eval_id": eid, "conversation": [turn]})
    (root / "traces.json").write_text(json.dumps({"eval_cases": traces}, ensure_ascii=False, indent=1), encoding="utf-8")
    (root / "basic-dataset.evalset.json").write_text(json.dumps({"eval_set_id": "basic-dataset", "eval_cases": cases}, ensure_ascii=False, indent=1), encoding="utf-8")
    (root / "outputs.jsonl").write_text(_outputs(), encoding="utf-8")
    (root / "eval_config.yaml").write_text(
        yaml.safe_dump({"metrics_to_run": [METRIC], "custom_metrics": [{"name": METRIC, "custom_function_file": "keyword_metrics.py"}]}),
        encoding="utf-8",
    )
    config = {
        "suites": [
            {
                "name": "app",
                "evalsets": "basic-dataset.evalset.json",
                "actual": "outputs.jsonl",
                "criteria": {METRIC: 0.5},
                "custom_metrics": {METRIC: {"code_config": {"name": "keyword_metrics.keyword_hit"}}},
                "not_evaluated": "ignore",  # the case without a reference errs on both sides
            }
        ],
        "gate": {"baseline": {"store": "dir", "path": "store"}},
    }
    (root / "evalgate.yaml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return root


def _adc(path: Path, token_uri: str) -> Path:
    """A service-account ADC file with a throwaway key: the SDK builds credentials before grading,
    even for local metrics; a token, when one is asked for, comes from `token_uri` (a fake)."""
    path.write_text(json.dumps({
        "type": "service_account", "project_id": "fake-project", "private_key_id": "fake-key-id",
        "private_key": _throwaway_private_key(), "client_email": "evals@fake-project.iam.gserviceaccount.com",
        "client_id": "1234567890", "token_uri": token_uri,
    }), encoding="utf-8")
    return path


def agents_cli(*args: str, cwd: Path, token_uri: str = "http://127.0.0.1:9/token", **env: str) -> subprocess.CompletedProcess:
    """`agents-cli ARGS` in `cwd`, offline: ADC from a throwaway file, the SDK's model-cost
    lookup local, and (EVALGATE_FAKE_AGENT_PLATFORM_URL) the eval service a fake."""
    full = {**os.environ, "GOOGLE_APPLICATION_CREDENTIALS": str(_adc(cwd / "adc.json", token_uri)), "GOOGLE_CLOUD_PROJECT": "fake-project",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8", **env}
    full.pop("GOOGLE_API_KEY", None)
    return subprocess.run([sys.executable, str(PEER), *args], cwd=cwd, env=full, capture_output=True, text=True, encoding="utf-8", timeout=300)


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> tuple[Path, Path]:
    """The project, and the results file the real `agents-cli eval grade` wrote for its traces."""
    root = make_project(tmp_path_factory.mktemp("acli") / "proj")
    proc = agents_cli("eval", "grade", "--traces", "traces.json", "--config", "eval_config.yaml", "--output", "grade", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [results] = sorted((root / "grade").glob("results_*.json"))
    return root, results


def _stored(root: Path) -> dict:
    data = gzip.decompress((root / "store" / "baselines" / "evalgate" / f"{SHA}.json.gz").read_bytes())
    return json.loads(data)


def test_agents_cli_results_seed_the_baseline_and_the_gate_compares_with_it(graded, tmp_path, cli):
    source, results = graded
    root = make_project(tmp_path / "proj")
    theirs = json.loads(results.read_text(encoding="utf-8"))
    code, out, err = cli("baseline", "import", "--agents-cli", str(results), "--commit", SHA, cwd=root)
    assert code == 0, out + err
    assert f"imported 14 cases of suite app ({METRIC})" in out and SHA in out, out

    # The baseline holds agents-cli's scores, case by case, under the suite's ids.
    graded_cases = theirs["evaluation_dataset"][0]["eval_cases"]
    expected = {}
    for entry in theirs["eval_case_results"]:
        case = graded_cases[entry["eval_case_index"]]
        expected[case.get("eval_case_id") or str(entry["eval_case_index"])] = entry["response_candidate_results"][0]["metric_results"][METRIC]
    baseline = _stored(root)
    [suite] = baseline["results"]["suites"]
    ours = {c["eval_id"]: c["criteria"][METRIC] for c in suite["cases"]}
    assert sorted(ours) == sorted(_ids()) == sorted(expected)
    assert {c["eval_set_id"] for c in suite["cases"]} == {"basic-dataset"}
    for eid, result in ours.items():
        assert result["score"] == expected[eid]["score"], eid
    assert ours["제주_날씨"]["score"] == pytest.approx(2 / 3) and ours["제주_날씨"]["status"] == "PASSED"
    assert ours["1"]["score"] == 1.0  # the case without eval_case_id: its index
    assert ours["挨拶"]["status"] == "NOT_EVALUATED" and ours["挨拶"]["error"] == expected["挨拶"]["error_message"]
    assert "reference" in ours["挨拶"]["error"], ours["挨拶"]
    assert ours["서울_날씨"]["per_invocation"][0]["details"]["explanation"] == "참조: 서울 맑음 20도"
    seoul = next(c for c in suite["cases"] if c["eval_id"] == "서울_날씨")
    assert seoul["invocations"][0]["actual_response"] == "서울은 맑음, 20도입니다." and seoul["invocations"][0]["user"] == "서울 날씨 어때요?"
    assert suite["criteria"][METRIC]["threshold"] == 0.5 and baseline["provenance"]["commit"] == SHA

    stored = root / "store" / "baselines" / "evalgate" / f"{SHA}.json.gz"
    code, out, err = cli("gate", "--baseline", str(stored), "--out", str(root / "same"), "--quiet", cwd=root)
    assert code == 0 and "evalgate gate: PASS against the baseline" in out, out + err

    (root / "outputs.jsonl").write_text(_outputs(REGRESSED), encoding="utf-8")
    code, out, err = cli("gate", "--baseline", str(stored), "--out", str(root / "worse"), cwd=root)
    assert code == 1 and "evalgate gate: FAIL against the baseline" in out, out + err
    assert f"{METRIC}: mean score dropped by" in out and "app: basic-dataset/서울_날씨 regressed" in out, out


def acli_project(root: Path) -> Path:
    """The same cases as an agents-cli project has them: datasets/basic-dataset.json, the traces
    as recorded outputs (traces/), eval_config.yaml as the suite's criteria; bad_traces/ the
    same traces with regressed answers."""
    make_project(root)
    traces = json.loads((root / "traces.json").read_text(encoding="utf-8"))
    dataset = {"eval_cases": [{k: v for k, v in c.items() if k in ("eval_case_id", "prompt", "reference")} for c in traces["eval_cases"]]}
    for folder in ("datasets", "traces", "bad_traces"):
        (root / folder).mkdir()
    (root / "datasets" / "basic-dataset.json").write_text(json.dumps(dataset, ensure_ascii=False, indent=1), encoding="utf-8")
    (root / "traces" / "traces_20261127_000000.json").write_text(json.dumps(traces, ensure_ascii=False, indent=1), encoding="utf-8")
    for case in traces["eval_cases"]:
        case["responses"] = [{"response": _content("model", REGRESSED)}]
        case["agent_data"]["turns"][0]["events"][0]["content"] = _content("model", REGRESSED)
    (root / "bad_traces" / "traces_20261127_000001.json").write_text(json.dumps(traces, ensure_ascii=False, indent=1), encoding="utf-8")
    config = {"suites": [{"name": "app", "evalsets": "datasets", "actual": "traces", "criteria": "eval_config.yaml", "not_evaluated": "ignore"}],
              "gate": {"baseline": {"store": "dir", "path": "store"}}}
    (root / "evalgate.yaml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return root


# The agents-cli readers (datasets and traces, branch acli-data) and eval_config.yaml as criteria
# (branch acli-metrics): with both, a project is gated as agents-cli lays it out.
ACLI_READY = all(importlib.util.find_spec(m) is not None for m in ("evalgate.agents_cli.traces", "evalgate.agents_cli.eval_config"))


@pytest.mark.skipif(not ACLI_READY, reason="needs the agents-cli readers (acli-data) and eval config criteria (acli-metrics)")
def test_on_an_agents_cli_project_the_imported_baseline_is_evalgates_own_run(graded, tmp_path, cli):
    """agents-cli's grade, imported, equals evalgate's own run on the same traces with the same
    eval_config.yaml, case by case (ids, eval set, digest, score, status, error) and criterion
    by criterion (no threshold), and the agents-cli file that run writes equals agents-cli's
    (every metric result, the summary); the gate PASSes on those traces and FAILs on regressed ones."""
    _source, results = graded
    root = acli_project(tmp_path / "proj")
    code, out, err = cli("baseline", "import", "--agents-cli", str(results), "--commit", SHA, cwd=root)
    assert code == 0, out + err
    stored = root / "store" / "baselines" / "evalgate" / f"{SHA}.json.gz"
    code, out, err = cli("gate", "--baseline", str(stored), "--out", "same", "--quiet", cwd=root)
    assert code == 0 and "evalgate gate: PASS against the baseline" in out, out + err
    [base] = _stored(root)["results"]["suites"]
    [ours] = json.loads((root / "same" / "results.json").read_text(encoding="utf-8"))["suites"]
    assert base["criteria"] == ours["criteria"] and base["criteria"][METRIC].get("no_threshold") is True
    key = lambda c: (c["eval_set_id"], c["eval_id"], c["expected_digest"], *(c["criteria"][METRIC].get(k) for k in ("score", "status", "error")))  # noqa: E731
    assert [key(c) for c in base["cases"]] == [key(c) for c in ours["cases"]]
    assert len(base["cases"]) == 14

    # And the agents-cli results file that run wrote is agents-cli's own, case by case.
    def by_id(data: dict) -> dict:
        cases = data["evaluation_dataset"][0]["eval_cases"]
        return {cases[r["eval_case_index"]].get("eval_case_id") or str(r["eval_case_index"]): r["response_candidate_results"] for r in data["eval_case_results"]}

    theirs, written = json.loads(results.read_text(encoding="utf-8")), json.loads((root / "same" / "agents-cli" / "results_app.json").read_text(encoding="utf-8"))
    assert by_id(written) == by_id(theirs) and written["summary_metrics"] == theirs["summary_metrics"]

    config = yaml.safe_load((root / "evalgate.yaml").read_text(encoding="utf-8"))
    config["suites"][0]["actual"] = "bad_traces"
    (root / "evalgate.yaml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    code, out, err = cli("gate", "--baseline", str(stored), "--out", "worse", cwd=root)
    assert code == 1 and "evalgate gate: FAIL against the baseline" in out and f"{METRIC}: mean score dropped by" in out, out + err


def _mean(results_json: Path) -> float:
    run = json.loads(results_json.read_text(encoding="utf-8"))
    scores = [c["criteria"][METRIC]["score"] for c in run["suites"][0]["cases"] if c["criteria"][METRIC]["score"] is not None]
    return sum(scores) / len(scores)


def test_agents_cli_compare_reads_what_evalgate_writes(graded, tmp_path, cli):
    _source, theirs = graded
    root = make_project(tmp_path / "proj")
    code, out, err = cli("run", "--out", str(root / "same"), "--quiet", cwd=root)
    assert code == 0, out + err
    (root / "outputs.jsonl").write_text(_outputs(REGRESSED), encoding="utf-8")
    code, out, err = cli("run", "--out", str(root / "worse"), "--quiet", cwd=root)
    assert code == 1, out + err
    ours, worse = root / "same" / "agents-cli" / "results_app.json", root / "worse" / "agents-cli" / "results_app.json"

    # The same answers: agents-cli finds our summary equal to its own.
    proc = agents_cli("eval", "compare", str(theirs), str(ours), cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    diff = json.loads(proc.stdout)
    assert "summary_metrics" in diff["unchanged_keys"], diff["differences"].get("summary_metrics")
    assert json.loads(ours.read_text(encoding="utf-8"))["summary_metrics"][0]["mean_score"] == pytest.approx(_mean(root / "same" / "results.json"))

    # A regression: its diff shows our two means.
    proc = agents_cli("eval", "compare", str(ours), str(worse), cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    moved = json.loads(proc.stdout)["differences"]["summary_metrics"]
    assert moved["baseline"][0]["mean_score"] == pytest.approx(_mean(root / "same" / "results.json"))
    assert moved["candidate"][0]["mean_score"] == 0.0
    assert moved["candidate"][0]["num_cases_error"] == 1 and moved["candidate"][0]["num_cases_total"] == 14


class _LossClusters(BaseHTTPRequestHandler):
    """The eval service's generateLossClusters, as far as `agents-cli eval analyze` uses it:
    a finished operation whose clusters group the results it was sent by score."""

    requests: list = []

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.endswith("/token"):  # OAuth's JWT grant (form-encoded) for the ADC file's service account
            return self._send({"access_token": "fake-token", "expires_in": 3600, "token_type": "Bearer"})
        body = json.loads(raw or b"{}")
        if not self.path.split("?")[0].endswith(":generateLossClusters"):
            return self._send({"error": {"code": 404, "message": self.path, "status": "NOT_FOUND"}}, 404)
        self.requests.append({"path": self.path, "body": body})
        by_score: dict[str, int] = {}
        for result in body["inlineResults"]["evaluationResults"]:
            for cand in result["candidate_results"]:
                key = f"score {cand['score']:g}" if "score" in cand else "no score"
                by_score[key] = by_score.get(key, 0) + 1
        config = body["configs"][0]
        clusters = [{"clusterId": str(i), "taxonomyEntry": {"l1Category": config["metric"], "l2Category": key, "description": f"{n} results"}, "itemCount": n}
                    for i, (key, n) in enumerate(sorted(by_score.items()))]
        self._send({"name": "operations/fake-1", "done": True, "response": {"results": [{"config": config, "clusters": clusters}]}})

    def _send(self, value: dict, status: int = 200) -> None:
        data = json.dumps(value).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_agents_cli_analyze_reads_what_evalgate_writes(tmp_path, cli):
    root = make_project(tmp_path / "proj")
    (root / "outputs.jsonl").write_text(_outputs().replace("서울은 맑음, 20도입니다.", "맑아요"), encoding="utf-8")
    code, out, err = cli("run", "--out", str(root / "out"), "--quiet", cwd=root)
    assert code == 1, out + err  # 서울_날씨 now fails
    (root / "agents-cli-manifest.yaml").write_text('name: "proj"\nagent_directory: "app"\n', encoding="utf-8")
    server = fake_http.serve(_LossClusters, requests=[])
    try:
        proc = agents_cli("eval", "analyze", "--eval-result", "out/agents-cli/results_app.json", "--output", "analysis.json", "--project", "fake-project",
                          cwd=root, token_uri=fake_http.base_url(server) + "/token", EVALGATE_FAKE_AGENT_PLATFORM_URL=fake_http.base_url(server) + "/")
        sent = server.RequestHandlerClass.requests
    finally:
        fake_http.stop(server)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [request] = sent
    assert "/locations/global" in request["path"] and request["body"]["configs"] == [{"metric": METRIC, "candidate": "candidate_1"}]
    scores = {}
    for result in request["body"]["inlineResults"]["evaluationResults"]:
        [cand] = result["candidate_results"]
        scores[result["request"]["prompt"]["agent_data"]["turns"][0]["events"][-1]["content"]["parts"][0]["text"]] = cand.get("score")
    run = json.loads((root / "out" / "results.json").read_text(encoding="utf-8"))
    for case in run["suites"][0]["cases"]:
        assert scores[case["invocations"][0]["actual_response"]] == case["criteria"][METRIC]["score"], case["eval_id"]
    assert scores["맑아요"] == 0.0
    # Its table shows the fake's clusters of what it was sent: 11 cases at 1, one each at 2/3 and 0, one errored.
    rows = {tuple(cell.strip() for cell in line.split("│")[2:4]) for line in proc.stdout.splitlines() if line.startswith("│")}
    assert rows == {("score 1", "11"), ("score 0.666667", "1"), ("score 0", "1"), ("no score", "1")}, proc.stdout
    assert json.loads((root / "analysis.json").read_text(encoding="utf-8"))["results"][0]["clusters"]


# --- bad input, a round trip and shards, without the peer ---------------------------------------


def _results_file(path: Path, cases: list[dict], results: list[dict] | None = None, **top) -> Path:
    """An agents-cli results file in the shape `eval grade` writes (every key, nulls included)."""
    if results is None:
        results = [
            {"eval_case_index": i, "response_candidate_results": [{"response_index": 0, "metric_results": {
                METRIC: {"metric_name": METRIC, "score": 1.0, "explanation": None, "rubric_verdicts": None, "raw_output": None, "error_message": None}}}]}
            for i in range(len(cases))
        ]
    data = {"eval_case_results": results, "summary_metrics": [], "win_rates": None,
            "evaluation_dataset": [{"bigquery_source": None, "gcs_source": None, "eval_cases": cases}],
            "metadata": {"candidate_names": ["candidate_1"], "creation_timestamp": "2026-11-27T19:30:29.054002Z"}, "agent_info": None, **top}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path





@pytest.mark.parametrize("change, place, what", [
    (lambda d: d.pop("eval_case_results"), None, "not an agents-cli results file (no eval_case_results)"),
    (lambda d: d.update(evaluation_dataset=None), "evaluation_dataset[0].eval_cases", "missing or empty, so no result can be matched to its case"),
    (lambda d: d["eval_case_results"][3].update(eval_case_index=40), "eval_case_results[3].eval_case_index", "40 is not a case of evaluation_dataset[0].eval_cases (14 cases)"),
    (lambda d: d["eval_case_results"][2].update(eval_case_index=0), "eval_case_results[2]", "case '서울_날씨' was graded again (first at eval_case_results[0])"),
    (lambda d: d["eval_case_results"][1]["response_candidate_results"][0]["metric_results"][METRIC].update(score="높음"), "eval_case_results[1].response_candidate_results[0].metric_results.keyword_hit.score", "valid number"),
    (lambda d: [c["response_candidate_results"][0]["metric_results"].update({"other_v1": c["response_candidate_results"][0]["metric_results"].pop(METRIC)}) for c in d["eval_case_results"]],
     None, "none of its metrics (other_v1) is a criterion of suite app (keyword_hit)"),
    (lambda d: [c.update(eval_case_id=f"x{i}") for i, c in enumerate(d["evaluation_dataset"][0]["eval_cases"])], None, "none of its cases (x0, x1, x10, x11, x12) is a case of suite app"),
    # The case named by its index answered another case's message: indexes shifted (a case agents-cli failed to run is left out).
    (lambda d: d["evaluation_dataset"][0]["eval_cases"][1].update(prompt=_content("user", "大阪の天気は?")), "eval_case_results[1]",
     "case '1' is named by its index, and the message it answered is not the one case '1' of eval set basic-dataset sends"),
    (lambda d: d["eval_case_results"][0]["response_candidate_results"][0]["metric_results"][METRIC].update(error_message=None, score=float("nan")), None, None),
])
def test_bad_results_files_are_one_clear_error_each(tmp_path, cli, change, place, what):
    root = make_project(tmp_path / "proj")
    cases = json.loads((root / "traces.json").read_text(encoding="utf-8"))["eval_cases"]
    path = _results_file(root / "results_1.json", cases)
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    code, out, err = cli("baseline", "import", "--agents-cli", "results_1.json", "--commit", SHA, cwd=root)
    if what is None:  # not an error: NaN (which agents-cli's JSON may hold) is no score
        assert code == 0, err
        seoul = next(c for c in _stored(root)["results"]["suites"][0]["cases"] if c["eval_id"] == "서울_날씨")
        assert seoul["criteria"][METRIC]["status"] == "NOT_EVALUATED" and seoul["criteria"][METRIC]["error"] == "the score is nan"
        return
    assert code == 2 and "Traceback" not in err, err
    [line] = err.strip().splitlines()
    head = "error: results_1.json: " + (f"{place}: " if place else "")
    assert line.startswith(head) and what in line, line
    assert not (root / "store").exists()


def test_bad_flags_are_clear_errors(tmp_path, cli):
    root = make_project(tmp_path / "proj")
    cases = json.loads((root / "traces.json").read_text(encoding="utf-8"))["eval_cases"]
    _results_file(root / "r.json", cases)
    code, out, err = cli("baseline", "import", "--agents-cli", "r.json", "--commit", "HEAD", cwd=root)
    assert code == 2 and "error: --commit: 'HEAD' is not a full commit sha, and" in err and "is not in a git checkout" in err, err
    code, out, err = cli("baseline", "import", "--agents-cli", "r.json", "--commit", SHA, "--suite", "ap", cwd=root)
    assert code == 2 and "error: --suite: the config has no suite 'ap'. Did you mean 'app'?" in err, err
    code, out, err = cli("baseline", "import", "--agents-cli", "r.json", "--commit", SHA, "--eval-set", "basic", cwd=root)
    assert code == 2 and "error: --eval-set: suite app has no eval set 'basic'" in err, err
    code, out, err = cli("baseline", "import", "--agents-cli", "missing.json", "--commit", SHA, cwd=root)
    assert code == 2 and "missing.json" in err, err
    (root / "r.json").write_text("{", encoding="utf-8")
    code, out, err = cli("baseline", "import", "--agents-cli", "r.json", "--commit", SHA, cwd=root)
    assert code == 2 and "error: r.json: line 1, column 2: invalid JSON" in err, err


def test_cases_and_metrics_the_suite_lacks_are_left_out_and_named(tmp_path, cli):
    root = make_project(tmp_path / "proj")
    cases = json.loads((root / "traces.json").read_text(encoding="utf-8"))["eval_cases"]
    cases.append({"eval_case_id": "새_케이스", "prompt": _content("user", "새 질문")})
    path = _results_file(root / "r.json", cases)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["eval_case_results"][0]["response_candidate_results"][0]["metric_results"]["final_response_quality_v2"] = {"score": 4.0}
    del data["eval_case_results"][4]["response_candidate_results"][0]["metric_results"][METRIC]
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    code, out, err = cli("baseline", "import", "--agents-cli", "r.json", "--commit", SHA, cwd=root)
    assert code == 0, out + err
    assert "note: 1 graded case is not a case of suite app, left out: 새_케이스" in err, err
    assert "note: metrics that are not criteria of suite app, left out: final_response_quality_v2" in err, err
    ours = {c["eval_id"]: c["criteria"][METRIC] for c in _stored(root)["results"]["suites"][0]["cases"]}
    assert "새_케이스" not in ours and len(ours) == 14
    assert ours["인사"]["status"] == "NOT_EVALUATED" and ours["인사"]["error"] == "the agents-cli results have no result of this metric for this case"


def test_evalgate_written_results_import_back_to_the_same_scores(tmp_path, cli):
    """Our agents-cli file, imported as a baseline, holds the scores of the run that wrote it:
    evalgate_eval_set_id names each case's eval set, even where two eval sets share an id."""
    root = make_project(tmp_path / "proj")
    evalset = json.loads((root / "basic-dataset.evalset.json").read_text(encoding="utf-8"))
    evalset["eval_set_id"] = "more"
    (root / "more.evalset.json").write_text(json.dumps(evalset, ensure_ascii=False), encoding="utf-8")
    (root / "outputs.jsonl").write_text(_outputs() + _outputs(REGRESSED).replace('"basic-dataset"', '"more"'), encoding="utf-8")
    config = yaml.safe_load((root / "evalgate.yaml").read_text(encoding="utf-8"))
    config["suites"][0]["evalsets"] = ["basic-dataset.evalset.json", "more.evalset.json"]
    (root / "evalgate.yaml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    code, out, err = cli("run", "--out", "out", "--quiet", cwd=root)
    assert code == 1, out + err
    code, out, err = cli("baseline", "import", "--agents-cli", "out/agents-cli/results_app.json", "--commit", SHA, cwd=root)
    assert code == 0 and "imported 28 cases" in out, out + err
    run = json.loads((root / "out" / "results.json").read_text(encoding="utf-8"))
    [suite] = _stored(root)["results"]["suites"]
    strip = lambda case: {k: case["criteria"][METRIC][k] for k in ("score", "status", "error")}  # noqa: E731
    assert [(c["eval_set_id"], c["eval_id"], strip(c)) for c in suite["cases"]] == [(c["eval_set_id"], c["eval_id"], strip(c)) for c in run["suites"][0]["cases"]]
    assert {c["expected_digest"] for c in suite["cases"]} == {c["expected_digest"] for c in run["suites"][0]["cases"]}

    # Without that field, an id two eval sets hold needs --eval-set.
    data = json.loads((root / "out" / "agents-cli" / "results_app.json").read_text(encoding="utf-8"))
    for case in data["evaluation_dataset"][0]["eval_cases"]:
        del case["evalgate_eval_set_id"]
    data["eval_case_results"] = data["eval_case_results"][:14]
    (root / "plain.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    code, out, err = cli("baseline", "import", "--agents-cli", "plain.json", "--commit", SHA, cwd=root)
    assert code == 2 and "error: plain.json: eval_case_results[0]: case '1' is in eval sets basic-dataset, more of suite app" in err, err
    code, out, err = cli("baseline", "import", "--agents-cli", "plain.json", "--commit", SHA, "--eval-set", "more", cwd=root)
    assert code == 0, out + err
    assert {c["eval_set_id"] for c in _stored(root)["results"]["suites"][0]["cases"]} == {"more"}


def test_the_file_is_the_same_bytes_every_run_and_after_merging_shards(tmp_path, cli):
    root = make_project(tmp_path / "proj")
    for out in ("a", "b"):
        assert cli("run", "--out", out, "--quiet", cwd=root)[0] == 0
    for k in (1, 2):
        assert cli("run", "--out", f"shard-{k}", "--shard", f"{k}/2", "--quiet", cwd=root)[0] == 0
    code, out, err = cli("merge", "shard-1", "shard-2", "--out", "merged", "--quiet", cwd=root)
    assert code == 0, out + err
    whole = (root / "a" / "agents-cli" / "results_app.json").read_bytes()
    assert whole == (root / "b" / "agents-cli" / "results_app.json").read_bytes()
    assert whole == (root / "merged" / "agents-cli" / "results_app.json").read_bytes()
    assert len((root / "shard-1" / "agents-cli" / "results_app.json").read_bytes()) < len(whole)
    data = json.loads(whole)
    assert [c["eval_case_index"] for c in data["eval_case_results"]] == list(range(14))
    assert data["metadata"]["creation_timestamp"] is None and "서울 날씨 어때요?" in whole.decode("utf-8")
    from agentplatform import types

    types.EvaluationResult.model_validate(data)  # what `eval analyze` reads it as


def test_store_flag_writes_the_data_branch_layout(tmp_path, cli):
    root = make_project(tmp_path / "proj")
    cases = json.loads((root / "traces.json").read_text(encoding="utf-8"))["eval_cases"]
    _results_file(root / "r.json", cases)
    code, out, err = cli("baseline", "import", "--agents-cli", "r.json", "--commit", SHA, "--store", str(tmp_path / "data"), cwd=root)
    assert code == 0, out + err
    assert (tmp_path / "data" / "baselines" / "evalgate" / f"{SHA}.json.gz").is_file()
    assert (tmp_path / "data" / "ledger" / "evalgate.json.gz").is_file() and (tmp_path / "data" / "trends" / "evalgate.json.gz").is_file()
    assert not (root / "store").exists()


def test_several_gradings_of_one_commit_go_into_the_ledger_the_last_is_the_baseline(tmp_path, cli):
    root = make_project(tmp_path / "proj")
    cases = json.loads((root / "traces.json").read_text(encoding="utf-8"))["eval_cases"]
    first = _results_file(root / "r1.json", cases)
    last = _results_file(root / "r2.json", cases)
    data = json.loads(last.read_text(encoding="utf-8"))
    data["eval_case_results"][0]["response_candidate_results"][0]["metric_results"][METRIC]["score"] = 0.25
    last.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    code, out, err = cli("baseline", "import", "--agents-cli", first.name, last.name, "--commit", SHA, cwd=root)
    assert code == 0, out + err
    assert "from r2.json as the baseline of" in out and ", and 2 gradings into the flake ledger" in out, out
    seoul = next(c for c in _stored(root)["results"]["suites"][0]["cases"] if c["eval_id"] == "서울_날씨")
    assert seoul["criteria"][METRIC]["score"] == 0.25
    ledger = json.loads(gzip.decompress((root / "store" / "ledger" / "evalgate.json.gz").read_bytes()))["entries"]
    assert [v for k, v in ledger.items() if "서울_날씨" in k and METRIC in k and v and 0.25 in v] == [[1.0, 0.25]], ledger


def test_rubric_verdicts_cross_in_both_directions(tmp_path, cli):
    """A graded metric's rubric verdicts (the SDK's RubricVerdict) become the baseline's rubrics as
    evalgate's criteria keep them; the agents-cli file written from them has them back as the SDK's."""
    root = make_project(tmp_path / "proj")
    cases = json.loads((root / "traces.json").read_text(encoding="utf-8"))["eval_cases"]
    path = _results_file(root / "r.json", cases)
    data = json.loads(path.read_text(encoding="utf-8"))
    verdicts = [
        {"evaluated_rubric": {"rubric_id": "날씨", "content": {"property": {"description": "날씨를 말한다"}}, "type": None, "importance": None}, "verdict": True, "reasoning": "맑음이라고 함"},
        {"evaluated_rubric": {"rubric_id": None, "content": {"property": {"description": "気温を言う"}}}, "verdict": False, "reasoning": None},
    ]
    data["eval_case_results"][0]["response_candidate_results"][0]["metric_results"][METRIC].update(rubric_verdicts=verdicts, explanation="1 of 2")
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    assert cli("baseline", "import", "--agents-cli", "r.json", "--commit", SHA, cwd=root)[0] == 0
    seoul = next(c for c in _stored(root)["results"]["suites"][0]["cases"] if c["eval_id"] == "서울_날씨")
    details = seoul["criteria"][METRIC]["per_invocation"][0]["details"]
    assert details == {"explanation": "1 of 2", "rubrics": [
        {"rubric_id": "날씨", "verdict": "yes", "rationale": "맑음이라고 함", "description": "날씨를 말한다"},
        {"rubric_id": "気温を言う", "verdict": "no", "rationale": "", "description": "気温を言う"},
    ]}

    from evalgate.baselines import decode_baseline
    from evalgate.reports.agents_cli import suite_results

    baseline = decode_baseline((root / "store" / "baselines" / "evalgate" / f"{SHA}.json.gz").read_bytes(), "baseline")
    written = suite_results(baseline.results.suites[0], {})
    index = [c["eval_case_id"] for c in written["evaluation_dataset"][0]["eval_cases"]].index("서울_날씨")
    back = written["eval_case_results"][index]["response_candidate_results"][0]["metric_results"][METRIC]
    assert back["explanation"] == "1 of 2"
    assert back["rubric_verdicts"] == [
        {"evaluated_rubric": {"rubric_id": "날씨", "content": {"property": {"description": "날씨를 말한다"}}}, "verdict": True, "reasoning": "맑음이라고 함"},
        {"evaluated_rubric": {"rubric_id": "気温を言う", "content": {"property": {"description": "気温を言う"}}}, "verdict": False, "reasoning": None},
    ]
    from agentplatform import types

    types.EvaluationResult.model_validate(written)
