"""Judge benchmark: evalgate's judge runtime against ADK 2.13's LocalEvalService, one fake Gemini.

    python bench/bench_judge.py        # --invocations 200 --samples 5 --latency 0.3 --quota 600

One process, one fake `generateContent` server (tests/fake_gemini.py) on 127.0.0.1 with a
latency on every answer and a quota (429 with Retry-After above N accepted requests in any
rolling 60 s). Both sides reach it through google-genai with GOOGLE_API_KEY and
GOOGLE_GEMINI_BASE_URL, as they would reach Gemini.

Data: `--invocations` single-invocation cases (English, Korean, Japanese), each with a user
message, a reference response and an actual response; two criteria, final_response_match_v2
and rubric_based_final_response_quality_v1 with two rubrics given in the criterion, each with
`--samples` samples: invocations x samples x 2 judge requests per side.

The fake judge answers each prompt in the shape its reader expects: evalgate's structured
JSON (it reads the request's responseJsonSchema), ADK's own formats (the
`is_the_agent_response_valid` JSON of its final_response_match_v2 prompt, the
ID/Property/Rationale/Verdict text of its rubric prompt). Its verdicts depend only on the
text it is shown (is the expected key fact in the agent's answer; is the answer in the
user's language), so both sides must reach the same scores. It is consistent on most cases:
on those of WOBBLE it dissents from its own verdict on some answers to the same prompt (by
arrival), never on a majority, so early stopping, full sampling and ADK must agree. Its
usageMetadata counts UTF-8 bytes / 4 of the prompt and of the answer, for both sides alike.

Phases (the fake's quota window is cleared before each):
  (a) evalgate: `engine.run` with `JudgeRuntime(concurrency=8)` (the config defaults: early
      stopping on) and a fresh cache in a temp dir, on `concurrency * 4` case threads, as
      `evalgate run` sets them;
  (b) the quota bound: requests / (quota / 60 s);
  (c) ADK: `LocalEvalService.evaluate` with the two metrics, ADK's defaults otherwise
      (EvaluateConfig.parallelism 4, judge_model_options.parallelism_limit 1, its default
      retry options), on hand-built InferenceResults;
  (d) an unchanged rerun of evalgate: a new runtime on the same cache;
  (e) evalgate drawing every sample (`judge.early_stop: false`), a fresh cache;
  (f) evalgate with early stopping under the plain majority rule (stopping on failing samples
      too, `JudgeRuntime(stop_on_failing=True)`), a fresh cache.

Requests, tokens and wall time are printed side by side, as ratios to (a).

Prints the table, whether each goal is met, and exits 1 if any evalgate judge request
failed, a case was not evaluated or a score differs from the expected one (a missed goal
alone does not change the exit code; it is printed). Exit 2 without google-adk.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import importlib.util
import json
import logging
import os
import re
import sys
import tempfile
import threading
import time
import types
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fake_gemini import FAKE_API_KEY, JUDGE_ENV_VARS, FakeGemini, Reply, error, prompt_text, system_text  # noqa: E402

FRM = "final_response_match_v2"
RUBRIC = "rubric_based_final_response_quality_v1"
THRESHOLD = 0.8
RUBRICS = [
    ("correct_result", "The final answer states the result the user asked for."),
    ("same_language", "The final answer is written in the language of the user's question."),
]
GOAL_BOUND = 1.15  # evalgate wall time / quota bound, at most
GOAL_ADK = 5.0  # ADK wall time / evalgate wall time, at least
GOAL_RERUN_S = 2.0
GOAL_EARLY = 1.5  # ADK requests / evalgate requests and ADK wall time / evalgate wall time, at least (early stopping)
# The judge is consistent on most cases. On the others it dissents from its own verdict on
# some answers to the same prompt (by arrival: the k-th answer to a prompt, k from 0), never
# on a majority, so every sampling rule reaches the same verdicts.
WOBBLE = {5: (1, 3), 15: (1,)}  # case index % 20 -> answers that dissent: 3-2 and 4-1 of 5


# --- data ------------------------------------------------------------------------------------

COUNTRIES = [
    ("France", "Paris", "프랑스", "파리", "フランス", "パリ"),
    ("Japan", "Tokyo", "일본", "도쿄", "日本", "東京"),
    ("Canada", "Ottawa", "캐나다", "오타와", "カナダ", "オタワ"),
    ("Australia", "Canberra", "호주", "캔버라", "オーストラリア", "キャンベラ"),
    ("Kenya", "Nairobi", "케냐", "나이로비", "ケニア", "ナイロビ"),
    ("Peru", "Lima", "페루", "리마", "ペルー", "リマ"),
    ("Norway", "Oslo", "노르웨이", "오슬로", "ノルウェー", "オスロ"),
    ("Egypt", "Cairo", "이집트", "카이로", "エジプト", "カイロ"),
]


@dataclass
class Case:
    index: int
    lang: str  # en, ko, ja: the user's language
    user: str
    reference: str
    actual: str
    key: str  # the fact the answer must contain (as the user's language writes it)
    expected_frm: float
    expected_rubric: float

    @property
    def eval_id(self) -> str:
        return f"case{self.index:04d}"


def language(text: str) -> str:
    if re.search("[가-힣]", text):
        return "ko"
    if re.search("[\u3040-\u30ff]", text):
        return "ja"
    return "en"


def make_cases(n: int) -> list[Case]:
    """n cases, deterministic: 70% English, 15% Korean, 15% Japanese; most answers right,
    some with a wrong fact, some (Korean/Japanese) answered in English."""
    cases = []
    for i in range(n):
        lang = "en" if i % 20 < 14 else ("ko" if i % 20 < 17 else "ja")
        kind = ("right", "right", "right", "right", "right", "right", "wrong", "right", "english", "right")[(i * 7) % 10]
        if lang == "en" and kind == "english":
            kind = "right"
        ticket = f"#{i:04d}"
        if i % 2 == 0:  # arithmetic
            a, b = 17 + i * 3, 40 + (i * 11) % 97
            key, wrong = str(a + b), str(a + b + 10)
            shown = wrong if kind == "wrong" else key
            if lang == "en":
                user, reference, actual = f"Ticket {ticket}: what is {a} plus {b}?", f"{a} plus {b} is {key}.", f"The sum is {shown}."
            elif lang == "ko":
                user, reference, actual = f"티켓 {ticket}: {a} 더하기 {b}는 얼마인가요?", f"{a} 더하기 {b}는 {key}입니다.", f"합계는 {shown}입니다."
            else:
                user, reference, actual = f"チケット {ticket}: {a}足す{b}はいくつですか？", f"{a}足す{b}は{key}です。", f"合計は{shown}です。"
            if kind == "english":
                actual = f"The sum is {key}."
        else:  # capitals
            en, cap, ko, ko_cap, ja, ja_cap = COUNTRIES[i % len(COUNTRIES)]
            other = COUNTRIES[(i + 3) % len(COUNTRIES)]
            if lang == "en":
                key = cap
                shown = other[1] if kind == "wrong" else cap
                user, reference, actual = f"Ticket {ticket}: what is the capital of {en}?", f"The capital of {en} is {cap}.", f"It is {shown}."
            elif lang == "ko":
                key = ko_cap
                shown = other[3] if kind == "wrong" else ko_cap
                user, reference, actual = f"티켓 {ticket}: {ko}의 수도는 어디인가요?", f"{ko}의 수도는 {ko_cap}입니다.", f"수도는 {shown}입니다."
            else:
                key = ja_cap
                shown = other[5] if kind == "wrong" else ja_cap
                user, reference, actual = f"チケット {ticket}: {ja}の首都はどこですか？", f"{ja}の首都は{ja_cap}です。", f"首都は{shown}です。"
            if kind == "english":  # the right city, but in English: the fake judge does not translate
                actual = f"The capital is {cap}."
        right = key in actual
        same_language = language(actual) == lang
        cases.append(Case(i, lang, user, reference, actual, key, 1.0 if right else 0.0,
                          (float(right) + float(same_language)) / 2))
    return cases


# --- the fake judge ----------------------------------------------------------------------------

_TICKET = re.compile(r"#(\d{4}):")


def _between(text: str, start: str, end: str, last: bool = False) -> Optional[str]:
    i = text.rfind(start) if last else text.find(start)
    if i < 0:
        return None
    j = text.find(end, i + len(start))
    return None if j < 0 else text[i + len(start): j].strip()


def approx_tokens(text: str) -> int:
    """A token count for the fake's usageMetadata, the same rule for both sides: UTF-8 bytes / 4
    (no tokenizer offline; it overcounts Korean and Japanese a little, on both sides alike)."""
    return (len(text.encode("utf-8")) + 3) // 4


class Judge:
    """Answers each judge prompt in its reader's format, with verdicts from the text shown (but
    for the dissenting answers of WOBBLE's cases), and usage from the text's size."""

    def __init__(self, cases: list[Case]):
        self.cases = {c.index: c for c in cases}
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.seen: dict[str, int] = {}  # prompt -> answers given so far
            self.tokens = {"prompt_tokens": 0, "output_tokens": 0}

    def __call__(self, body: Any) -> Any:
        out = self.answer(body)
        if isinstance(out, Reply):
            return out
        text = out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)
        prompt, output = approx_tokens(system_text(body) + prompt_text(body)), approx_tokens(text)
        with self._lock:
            self.tokens["prompt_tokens"] += prompt
            self.tokens["output_tokens"] += output
        usage = {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output}
        return Reply(200, {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP",
                                           "index": 0}], "usageMetadata": usage})

    def dissents(self, case: Case, prompt: str) -> bool:
        with self._lock:
            k = self.seen.get(prompt, 0)
            self.seen[prompt] = k + 1
        return k in WOBBLE.get(case.index % 20, ())

    def answer(self, body: Any) -> Any:
        prompt = prompt_text(body)
        match = _TICKET.search(prompt)
        case = self.cases.get(int(match.group(1))) if match else None
        if case is None:
            return error(400, "bench judge: no ticket number in the prompt")
        flip = self.dissents(case, prompt)
        config = (body or {}).get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("response_json_schema")
        props = (schema or {}).get("properties") or {}
        if "verdict" in props:  # evalgate final_response_match_v2
            answer = html.unescape(_between(prompt, "<agent_response>", "</agent_response>") or "")
            valid = (case.key in answer) != flip
            return {"reasoning": f"the answer {'gives' if valid else 'does not give'} {case.key}",
                    "verdict": "valid" if valid else "invalid"}
        if "verdicts" in props:  # evalgate rubric criterion
            answer = html.unescape(_between(prompt, "<final_answer>", "</final_answer>") or "")
            ids = props["verdicts"]["items"]["properties"]["rubric_id"]["enum"]
            return {"verdicts": [{"rubric_id": rid, "rationale": "checked against the question",
                                  "verdict": "yes" if self.rubric(rid, case, answer, flip) else "no"} for rid in ids]}
        if '"is_the_agent_response_valid"' in prompt:  # ADK final_response_match_v2 prompt
            m = re.search(r'"Agent response": (.*?),\n\s*"Reference response"', prompt, re.DOTALL)
            valid = (bool(m) and case.key in m.group(1)) != flip
            return ('{\n  "reasoning": "the answer %s %s",\n  "is_the_agent_response_valid": "%s"\n}'
                    % ("gives" if valid else "does not give", case.key, "valid" if valid else "invalid"))
        if "# Your Turn" in prompt:  # ADK rubric prompt: its example has the same tags, so take the last ones
            answer = _between(prompt, "<final_answer>", "</final_answer>", last=True) or ""
            properties = _between(prompt, "<properties>", "</properties>", last=True) or ""
            out = []
            for rid, text in re.findall(r"\[id: ([^\]]+)\] (.*)", properties):
                verdict = "yes" if self.rubric(rid.strip(), case, answer, flip) else "no"
                out.append(f"ID: {rid.strip()}\nProperty: {text.strip()}\nEvidence: the user prompt.\n"
                           f"Rationale: checked against the question.\nVerdict: {verdict}\n")
            return "\n".join(out)
        return error(400, "bench judge: unknown prompt")

    @staticmethod
    def rubric(rid: str, case: Case, answer: str, flip: bool = False) -> bool:
        if rid == "correct_result":  # the rubric a dissenting answer gets wrong
            return (case.key in answer) != flip
        if rid == "same_language":
            return language(answer) == case.lang
        raise ValueError(f"unknown rubric {rid!r}")


class QuotaLog:
    """Every quota decision of the fake: (time, accepted)."""

    def __init__(self, fake: FakeGemini):
        self.events: list[tuple[float, bool]] = []
        self._lock = threading.Lock()
        inner = fake._quota_wait

        def recorded() -> Optional[float]:
            wait = inner()
            with self._lock:
                self.events.append((time.monotonic(), wait is None))
            return wait

        fake._quota_wait = recorded  # type: ignore[method-assign]

    def clear(self) -> None:
        with self._lock:
            self.events.clear()

    def summary(self, t0: float) -> dict[str, Any]:
        with self._lock:
            events = list(self.events)
        accepted = [t - t0 for t, ok in events if ok]
        return {
            "attempts": len(events),
            "accepted": len(accepted),
            "rejected_429": sum(1 for _, ok in events if not ok),
            "first_accepted": min(accepted, default=None),
            "last_accepted": max(accepted, default=None),
            "per_minute": [sum(1 for t in accepted if 60 * m <= t < 60 * (m + 1)) for m in range(int(max(accepted, default=0) // 60) + 1)],
        }


# --- evalgate ----------------------------------------------------------------------------------


def evalgate_plans(cases: list[Case], samples: int):
    from evalgate.adk import Invocation
    from evalgate.criteria.final_response_match_v2 import FinalResponseMatchV2
    from evalgate.criteria.rubric_final_response import RubricFinalResponseQuality
    from evalgate.engine import CaseInput, SuitePlan

    options = {"num_samples": samples}
    criteria = {
        FRM: FinalResponseMatchV2(threshold=THRESHOLD, judge_model_options=options),
        RUBRIC: RubricFinalResponseQuality(
            threshold=THRESHOLD, judge_model_options=options,
            rubrics=[{"rubric_id": rid, "rubric_content": {"text_property": text}} for rid, text in RUBRICS],
        ),
    }

    def inv(c: Case, response: str) -> Invocation:
        return Invocation.model_validate({
            "invocation_id": f"{c.eval_id}-0",
            "user_content": {"role": "user", "parts": [{"text": c.user}]},
            "final_response": {"role": "model", "parts": [{"text": response}]},
        })

    inputs = [
        CaseInput(eval_set_id="bench", eval_id=c.eval_id, criteria=criteria, expected_digest=f"d{c.index}",
                  expected=[inv(c, c.reference)], actual=[inv(c, c.actual)])
        for c in cases
    ]
    return [SuitePlan(name="bench", cases=inputs)]


def run_evalgate(cases: list[Case], samples: int, concurrency: int, cache_dir: Path, early_stop: bool,
                 rpm: Optional[int] = None, stop_on_failing: bool = False) -> dict[str, Any]:
    from evalgate import engine
    from evalgate.config import JudgeConfig
    from evalgate.judge.runtime import JudgeRuntime

    plans = evalgate_plans(cases, samples)
    judge = JudgeConfig()  # the config's defaults, as `evalgate run` builds its runtime (cli._judge_runtime)
    runtime = JudgeRuntime(concurrency=concurrency, rpm=rpm or judge.rpm, timeout_s=judge.timeout_s,
                           deadline_s=judge.deadline_s, max_attempts=judge.max_attempts, cache_dir=cache_dir,
                           early_stop=early_stop, stop_on_failing=stop_on_failing)
    workers = concurrency * 4
    # Attempts per ask, observed from outside: the runtime passes the attempt number (its last
    # argument) to each HTTP attempt. A private method: if it changes, the figure is left out.
    tries: dict[int, int] = {}
    lock = threading.Lock()
    inner = runtime._attempt

    def counted(*args: Any, **kwargs: Any) -> Any:
        attempt = kwargs.get("attempt", args[-1] if args else None)
        if isinstance(attempt, int):
            with lock:
                tries[attempt] = tries.get(attempt, 0) + 1
        return inner(*args, **kwargs)

    runtime._attempt = counted  # type: ignore[method-assign]
    t0 = time.perf_counter()
    try:
        results = engine.run(plans, "bench", runtime=runtime, workers=workers)
    finally:
        runtime.close()
    seconds = time.perf_counter() - t0
    stats = runtime.stats()
    total = {k: sum(s.get(k, 0) for s in stats.values())
             for k in ("requests", "cache_hits", "retries", "failures", "prompt_tokens", "output_tokens")}
    scores = {}
    for case in results.suites[0].cases:
        for name, crit in case.criteria.items():
            scores[(case.eval_id, name)] = (crit.score, crit.status.value, crit.error)
    # asks that took exactly k attempts: reached attempt k, not attempt k + 1
    per_ask = {k: tries[k] - tries.get(k + 1, 0) for k in sorted(tries)}
    return {"seconds": seconds, "stats": stats, "total": total, "scores": scores, "workers": workers,
            "attempts_per_ask": per_ask}


# --- ADK ---------------------------------------------------------------------------------------


def run_adk(cases: list[Case], samples: int) -> dict[str, Any]:
    from google.adk.agents import Agent
    from google.adk.evaluation.base_eval_service import EvaluateConfig, EvaluateRequest, InferenceResult, InferenceStatus
    from google.adk.evaluation.eval_case import EvalCase, Invocation
    from google.adk.evaluation.eval_metrics import (
        EvalMetric,
        JudgeModelOptions,
        LlmAsAJudgeCriterion,
        RubricsBasedCriterion,
    )
    from google.adk.evaluation.eval_rubrics import Rubric, RubricContent
    from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
    from google.adk.evaluation.local_eval_service import LocalEvalService
    from google.genai import types

    app, set_id = "bench_app", "bench"
    manager = InMemoryEvalSetsManager()
    manager.create_eval_set(app, set_id)

    def inv(c: Case, response: str) -> Invocation:
        return Invocation(
            invocation_id=f"{c.eval_id}-0",
            user_content=types.Content(role="user", parts=[types.Part(text=c.user)]),
            final_response=types.Content(role="model", parts=[types.Part(text=response)]),
        )

    for c in cases:
        manager.add_eval_case(app, set_id, EvalCase(eval_id=c.eval_id, conversation=[inv(c, c.reference)]))
    inferences = [
        InferenceResult(app_name=app, eval_set_id=set_id, eval_case_id=c.eval_id, inferences=[inv(c, c.actual)],
                        session_id=None, status=InferenceStatus.SUCCESS)
        for c in cases
    ]
    metrics = [
        EvalMetric(metric_name=FRM, criterion=LlmAsAJudgeCriterion(
            threshold=THRESHOLD, judge_model_options=JudgeModelOptions(num_samples=samples))),
        EvalMetric(metric_name=RUBRIC, criterion=RubricsBasedCriterion(
            threshold=THRESHOLD, judge_model_options=JudgeModelOptions(num_samples=samples),
            rubrics=[Rubric(rubric_id=rid, rubric_content=RubricContent(text_property=text)) for rid, text in RUBRICS])),
    ]
    config = EvaluateConfig(eval_metrics=metrics)  # parallelism: ADK's default
    service = LocalEvalService(root_agent=Agent(name="bench_agent", model="gemini-2.5-flash"), eval_sets_manager=manager)

    async def evaluate() -> list[Any]:
        return [r async for r in service.evaluate(EvaluateRequest(inference_results=inferences, evaluate_config=config))]

    t0 = time.perf_counter()
    results = asyncio.run(evaluate())
    seconds = time.perf_counter() - t0
    scores = {}
    for r in results:
        for m in r.overall_eval_metric_results:
            scores[(r.eval_id, m.metric_name)] = (m.score, m.eval_status.name, None)
    return {"seconds": seconds, "scores": scores, "parallelism": config.parallelism,
            "parallelism_limit": JudgeModelOptions().parallelism_limit}


class _Absent(types.ModuleType):
    """A stand-in for a module ADK imports but these two metrics never use: any use raises."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(f"bench_judge: {self.__name__}.{name} is not installed (stubbed), yet ADK used it")


# ADK's evaluation package imports its Vertex AI facade (pandas, agentplatform, vertexai: the
# `google-adk[eval]` extra) when LocalEvalService is imported; the two LLM-judge metrics here
# go through google-genai only. Without the extra, these modules are stubbed, loudly.
VERTEX_ONLY = ("pandas", "agentplatform", "vertexai")


def stub_vertex_only() -> list[str]:
    missing = [name for name in VERTEX_ONLY if importlib.util.find_spec(name) is None]
    for name in missing:
        sys.modules[name] = _Absent(name)
    return missing


class _Counter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.counts: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        key = ("genai retry" if message.startswith("Retrying") else
               "sample failed" if "Evaluation sample failed" in message else
               "metric failed" if "Metric evaluation failed" in message else None)
        if key:
            self.counts[key] = self.counts.get(key, 0) + 1


# --- main --------------------------------------------------------------------------------------


def _fmt(seconds: Optional[float]) -> str:
    return "-" if seconds is None else f"{seconds:.1f} s" if seconds >= 10 else f"{seconds:.2f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--invocations", type=int, default=200)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.3, help="seconds added to every answer of the fake")
    parser.add_argument("--quota", type=int, default=600, help="accepted requests per rolling minute; 429 above")
    parser.add_argument("--concurrency", type=int, default=8, help="evalgate's judge concurrency (the default is 8)")
    parser.add_argument("--adk-invocations", type=int, default=None,
                        help="invocations for ADK (default: all); fewer gives a linear projection, labelled as such")
    parser.add_argument("--skip-adk", action="store_true")
    parser.add_argument("--skip-full", action="store_true", help="skip evalgate with judge.early_stop: false")
    parser.add_argument("--skip-plain", action="store_true", help="skip evalgate with early stopping under the plain majority rule")
    parser.add_argument("--rpm", type=int, default=None, help="evalgate's judge.rpm (default: none, the config's)")
    args = parser.parse_args()

    try:
        import google.adk  # noqa: F401
    except ImportError:
        if not args.skip_adk:
            print("google-adk is not installed: pip install -e '.[test]' (or pass --skip-adk)", file=sys.stderr)
            return 2

    stubbed = [] if args.skip_adk else stub_vertex_only()
    logging.basicConfig(level=logging.ERROR)
    warnings.filterwarnings("ignore")  # ADK's [EXPERIMENTAL] warnings
    counter = _Counter()
    for name in ("google_genai._api_client", "google_adk"):
        logger = logging.getLogger(name)
        logger.addHandler(counter)
        logger.setLevel(logging.INFO)
        logger.propagate = False

    cases = make_cases(args.invocations)
    judge = Judge(cases)
    fake = FakeGemini(judge).start()
    fake.latency = args.latency
    fake.quota_per_minute = args.quota
    quota = QuotaLog(fake)
    for name in JUDGE_ENV_VARS:
        os.environ.pop(name, None)
    os.environ["GOOGLE_API_KEY"] = FAKE_API_KEY
    os.environ["GOOGLE_GEMINI_BASE_URL"] = fake.url

    requests = args.invocations * args.samples * 2
    rate = args.quota / 60.0
    bound = requests / rate
    lang = {k: sum(1 for c in cases if c.lang == k) for k in ("en", "ko", "ja")}
    wobbly = sum(1 for c in cases if c.index % 20 in WOBBLE)
    print(f"bench_judge: {args.invocations} invocations ({lang['en']} en, {lang['ko']} ko, {lang['ja']} ja) x "
          f"{args.samples} samples x 2 criteria = {requests} judge requests per side with every sample drawn")
    print(f"fake judge: consistent on {args.invocations - wobbly} cases; on {wobbly} it dissents from its own verdict on "
          f"some answers (never a majority): answers {', '.join(f'{sorted(k)}' for k in WOBBLE.values())} of a prompt")
    print(f"fake Gemini: latency {args.latency:g} s per answer (429s too), quota {args.quota} requests per rolling "
          f"minute (429 + Retry-After above it); quota bound {requests} / ({args.quota}/60 s) = {bound:.1f} s")
    print(f"evalgate: JudgeRuntime(concurrency={args.concurrency}), config defaults otherwise (early_stop on, "
          f"rpm {args.rpm or 'none'}, "
          f"max_attempts 5, timeout 60 s), {args.concurrency * 4} case threads, fresh cache in a temp dir",
          flush=True)
    if stubbed:
        print(f"ADK: not installed (from the google-adk[eval] extra), stubbed: {', '.join(stubbed)}; ADK imports "
              "them for its Vertex AI facade only, and any use would raise")

    def phase() -> float:
        fake.reset()
        quota.clear()
        judge.reset()
        return time.monotonic()

    problems: list[str] = []
    expected = {}
    for c in cases:
        expected[(c.eval_id, FRM)] = c.expected_frm
        expected[(c.eval_id, RUBRIC)] = c.expected_rubric

    def check(label: str, result: dict[str, Any]) -> None:
        if result["total"]["failures"] or any(r.status not in (200, 429) for r in fake.requests):
            problems.append(f"{label}: {result['total']['failures']} judge requests failed")
        wrong = [(k, v, expected[k]) for k, v in result["scores"].items() if v[0] != expected[k]]
        if wrong:
            problems.append(f"{label}: {len(wrong)} scores differ from the expected ones, e.g. {wrong[:3]}")

    with tempfile.TemporaryDirectory(prefix="evalgate-bench-judge-") as tmp:
        # (a) evalgate, cold cache, early stopping (the default)
        t0 = phase()
        first = run_evalgate(cases, args.samples, args.concurrency, Path(tmp) / "cache", early_stop=True, rpm=args.rpm)
        first_wire = quota.summary(t0)
        first_429 = sum(1 for r in fake.requests if r.status == 429)
        max_in_flight = fake.max_in_flight
        check("evalgate", first)
        print(f"(a) evalgate: {_fmt(first['seconds'])}, {first['total']['requests']} HTTP requests "
              f"({first_429} answered 429), {first['total']['retries']} retries, {first['total']['failures']} failures",
              flush=True)

        # (d) unchanged rerun: a new runtime on the same cache
        phase()
        second = run_evalgate(cases, args.samples, args.concurrency, Path(tmp) / "cache", early_stop=True, rpm=args.rpm)
        rerun_requests = len(fake.requests)
        print(f"(d) evalgate rerun: {_fmt(second['seconds'])}, {rerun_requests} requests, "
              f"{second['total']['cache_hits']} cache hits", flush=True)
        if second["scores"] != first["scores"]:
            problems.append("evalgate: the rerun's scores differ from the first run's")
        if second["total"]["failures"]:
            problems.append(f"evalgate rerun: {second['total']['failures']} judge requests failed")

        # (e) evalgate drawing every sample (judge.early_stop: false), a fresh cache
        full = None
        if not args.skip_full:
            t0 = phase()
            full = run_evalgate(cases, args.samples, args.concurrency, Path(tmp) / "cache-full", early_stop=False,
                                rpm=args.rpm)
            full_429 = sum(1 for r in fake.requests if r.status == 429)
            check("evalgate, every sample", full)
            if full["scores"] != first["scores"]:
                problems.append("evalgate: early stopping and full sampling reached different scores")
            print(f"(e) evalgate, every sample: {_fmt(full['seconds'])}, {full['total']['requests']} HTTP requests "
                  f"({full_429} answered 429)", flush=True)

        # (f) evalgate, early stopping under the plain majority rule (stop on failing samples too)
        plain = None
        if not args.skip_plain:
            t0 = phase()
            plain = run_evalgate(cases, args.samples, args.concurrency, Path(tmp) / "cache-plain", early_stop=True,
                                 rpm=args.rpm, stop_on_failing=True)
            plain_wire = quota.summary(t0)
            check("evalgate, plain majority rule", plain)
            if plain["scores"] != first["scores"]:
                problems.append("evalgate: the plain majority rule and evalgate's rule reached different scores")
            print(f"(f) evalgate, plain majority rule: {_fmt(plain['seconds'])}, {plain['total']['requests']} HTTP requests, "
                  f"{plain_wire['accepted']} accepted", flush=True)

    # (c) ADK
    adk = None
    adk_cases = cases[: args.adk_invocations] if args.adk_invocations else cases
    adk_requests = len(adk_cases) * args.samples * 2
    if not args.skip_adk:
        print(f"(c) ADK LocalEvalService on {len(adk_cases)} invocations ({adk_requests} judge requests) ...", flush=True)
        t0 = phase()
        adk = run_adk(adk_cases, args.samples)
        adk_wire = quota.summary(t0)
        adk_429 = sum(1 for r in fake.requests if r.status == 429)
        adk_accepted = sum(1 for r in fake.requests if r.status == 200)
        adk_tokens = dict(judge.tokens)
        adk_max_in_flight = fake.max_in_flight
        adk_not_evaluated = sum(1 for v in adk["scores"].values() if v[0] is None)
        agree = sum(1 for k, v in adk["scores"].items() if v[0] == first["scores"].get(k, (None,))[0])
        print(f"(c) ADK: {_fmt(adk['seconds'])}, {len(fake.requests)} HTTP requests ({adk_429} answered 429)",
              flush=True)
    fake.stop()

    # --- the table ---------------------------------------------------------------------------
    def tokens(total: dict[str, int]) -> str:
        return f"{total['prompt_tokens']:,} / {total['output_tokens']:,}"

    ratio_bound = first["seconds"] / bound
    header = ("", "wall time", "HTTP requests", "accepted", "tokens in / out", "")
    rows = [
        ("(a) evalgate, early stop (default)", _fmt(first["seconds"]), f"{first['total']['requests']}",
         f"{first_wire['accepted']}", tokens(first["total"]), f"{ratio_bound:.2f}x the quota bound"),
    ]
    if full is not None:
        rows.append(("(e) evalgate, every sample", _fmt(full["seconds"]), f"{full['total']['requests']}",
                     f"{full['total']['requests'] - full_429}", tokens(full["total"]), f"{full['seconds'] / bound:.2f}x the quota bound"))
    if plain is not None:
        rows.append(("(f) evalgate, plain majority rule", _fmt(plain["seconds"]), f"{plain['total']['requests']}",
                     f"{plain_wire['accepted']}", tokens(plain["total"]), f"{plain['seconds'] / bound:.2f}x the quota bound"))
    rows.append(("(b) quota bound, every sample", _fmt(bound), f"{requests}", "", "", f"{requests} / ({args.quota}/60 s)"))
    adk_total = None
    if adk is not None:
        projected = len(adk_cases) < len(cases)
        adk_total = adk["seconds"] * (len(cases) / len(adk_cases))
        label = "(c) ADK LocalEvalService" + (f", {len(adk_cases)} invocations" if projected else "")
        rows.append((label, _fmt(adk["seconds"]), f"{adk_wire['attempts']}", f"{adk_accepted}", tokens(adk_tokens),
                     f"{adk['seconds'] / bound:.2f}x the quota bound" if not projected else "measured on a subset"))
        if projected:
            rows.append((f"(c') ADK, PROJECTED to {len(cases)} invocations", _fmt(adk_total), f"~{requests}", "", "",
                         "linear projection of the subset (blind to the quota if the subset never reached it)"))
    rows.append(("(d) evalgate, unchanged rerun", _fmt(second["seconds"]), f"{rerun_requests}", "", "",
                 f"{second['total']['cache_hits']} cache hits"))
    width = [max(len(r[i]) for r in rows + [header]) for i in range(6)]
    print()
    print("  ".join(f"{h:<{width[i]}}" if i in (0, 5) else f"{h:>{width[i]}}" for i, h in enumerate(header)))
    for r in rows:
        print("  ".join(f"{v:<{width[i]}}" if i in (0, 5) else f"{v:>{width[i]}}" for i, v in enumerate(r)))

    def ratios(label: str, other: dict[str, Any], other_tokens: dict[str, int], other_accepted: int) -> tuple[float, float]:
        req = other_accepted / first_wire["accepted"]
        wall = other["seconds"] / first["seconds"]
        tok = (other_tokens["prompt_tokens"] + other_tokens["output_tokens"]) / max(
            1, first["total"]["prompt_tokens"] + first["total"]["output_tokens"])
        print(f"{label} / evalgate (early stop): requests answered {req:.2f}x, tokens {tok:.2f}x, wall time {wall:.2f}x")
        return req, wall

    print()
    goals = [(f"evalgate within {GOAL_BOUND}x of the quota bound", ratio_bound <= GOAL_BOUND, f"{ratio_bound:.2f}x")]
    if full is not None:
        ratios("evalgate, every sample", full, full["total"], full["total"]["requests"] - full_429)
    if adk is not None and adk_total is not None:
        req, wall = ratios("ADK" + (" (subset, not comparable)" if len(adk_cases) < len(cases) else ""), adk, adk_tokens,
                           adk_accepted)
        if plain is not None:
            print(f"ADK / evalgate (plain majority rule): requests answered {adk_accepted / plain_wire['accepted']:.2f}x, "
                  f"wall time {adk['seconds'] / plain['seconds']:.2f}x")
        print(f"verdicts: evalgate (early stop) and ADK agree on {agree} of {len(adk['scores'])} (case, metric) scores"
              + ("; evalgate with every sample agrees with early stop on all" if full is not None and full["scores"] == first["scores"] else ""))
        speedup = adk_total / first["seconds"]
        goals.append((f"evalgate at least {GOAL_ADK:g}x faster than ADK's defaults", speedup >= GOAL_ADK,
                      f"{speedup:.2f}x" + (" (projected)" if len(adk_cases) < len(cases) else "")))
        if len(adk_cases) == len(cases):
            goals.append((f"at least {GOAL_EARLY:g}x fewer requests than ADK, identical verdicts",
                           req >= GOAL_EARLY and agree == len(adk["scores"]), f"{req:.2f}x, {agree} of {len(adk['scores'])} agree"))
            goals.append((f"at least {GOAL_EARLY:g}x less wall time than ADK under the same quota", wall >= GOAL_EARLY, f"{wall:.2f}x"))
    goals.append((f"unchanged rerun under {GOAL_RERUN_S:g} s with zero requests",
                  second["seconds"] < GOAL_RERUN_S and rerun_requests == 0 and second["total"]["requests"] == 0,
                  f"{second['seconds']:.2f} s, {rerun_requests} requests"))
    for name, ok, figure in goals:
        print(f"goal: {name}: {'met' if ok else 'NOT met'} ({figure})")

    print()
    print(f"evalgate attempts per judge request: {first['attempts_per_ask']} (max_attempts 5)")
    print(f"evalgate on the wire: {first_wire['attempts']} attempts, {first_wire['accepted']} accepted, "
          f"{first_wire['rejected_429']} answered 429; accepted per minute {first_wire['per_minute']}; "
          f"last accepted at {_fmt(first_wire['last_accepted'])}; most in flight {max_in_flight}")
    if adk is not None:
        print(f"ADK on the wire: {adk_wire['attempts']} attempts, {adk_wire['accepted']} accepted, "
              f"{adk_wire['rejected_429']} answered 429; accepted per minute {adk_wire['per_minute']}; "
              f"last accepted at {_fmt(adk_wire['last_accepted'])}; most in flight {adk_max_in_flight}")
        print(f"ADK defaults: EvaluateConfig.parallelism {adk['parallelism']} cases at once, "
              f"judge_model_options.parallelism_limit {adk['parallelism_limit']} (samples one after another), "
              f"metrics one after another; google-genai retries {counter.counts.get('genai retry', 0)}, "
              f"failed samples {counter.counts.get('sample failed', 0)}, "
              f"NOT_EVALUATED metric results {adk_not_evaluated}")
    print(f"tokens: the fake reports UTF-8 bytes / 4 of each prompt (system instruction included) and answer, for "
          f"both sides alike; ADK's prompts are its own (longer) ones")
    if problems:
        print()
        for p in problems:
            print(f"error: {p}", file=sys.stderr)
        return 1
    return 0

if __name__ == "__main__":
    sys.exit(main())
