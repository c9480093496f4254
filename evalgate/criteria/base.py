"""The criterion contract: parameters as pydantic fields, scoring as one method.

A criterion scores one invocation (actual against expected) or one trace and returns an
`Outcome`. It does not apply thresholds, average invocations or catch its own errors: the
engine does all three, the same way for every criterion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from evalgate.adk import Invocation
from evalgate.results import Status

InputKind = Literal["invocations", "trace", "acli"]
Scope = Literal["invocation", "case"]


@dataclass
class Outcome:
    """The result of scoring one invocation or trace.

    `score` is None when the criterion could not evaluate it; `error` then says why.
    `details` is free-form, JSON-serialisable, and goes into the results file.
    """

    score: float | None
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    # Set only by a criterion that decides its own verdict (a custom metric returns its
    # statuses, as in ADK); otherwise the engine applies the threshold to the score.
    status: Status | None = None


@dataclass
class CaseOutcome:
    """A whole-case criterion's result (scope "case"): its verdict on the case, and one
    outcome per actual invocation (placeholders with score None where it judged no turn
    on its own, as ADK's multi-turn metrics leave every turn but the last)."""

    overall: Outcome
    per_invocation: list[Outcome]


class Criterion(BaseModel):
    """Base class of every criterion. Subclasses set `name` and implement a score method."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, loc_by_alias=False)

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    input_kind: ClassVar[InputKind] = "invocations"
    needs_expected: ClassVar[bool] = True
    # A judge criterion's verdicts are noisy (an LLM samples them); a deterministic one
    # gives the same score for the same data. The gate treats the two differently.
    judge: ClassVar[bool] = False
    # The remote service a judge criterion calls ("gemini" or "vertex"), for credential checks.
    service: ClassVar[str | None] = None
    # "invocation": scored turn by turn, the case score the mean (most of ADK's metrics).
    # "case": the criterion judges the conversation as a whole (`score_case`) and gives the
    # case's verdict itself; the engine does not average its turns.
    scope: ClassVar[Scope] = "invocation"
    # The scale of its scores, lowest to highest (the threshold is on it): the gate's margins,
    # resolution and assumed run-to-run sd are fractions of this range (evalgate.gate.values.score_range).
    score_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    # The parts of a case's expected data the criterion reads (evalgate.loaders.evalsets.PARTS):
    # a case is paired with its baseline when these (and what the agent's run reads) are the
    # same. "*": all of it, the safe default for a criterion that does not say.
    reads: ClassVar[frozenset[str]] = frozenset({"*"})
    # False for a criterion without a threshold (agents-cli's metrics): a scored case is
    # PASSED with its score, and only the gate's comparison with the baseline judges it.
    has_threshold: ClassVar[bool] = True

    threshold: float = Field(ge=0.0, le=1.0, description="Pass when the score is at least this.")
    include_intermediate_responses_in_final: bool = Field(
        default=False,
        description="ADK option: judge the intermediate text together with the final response. "
        "Accepted everywhere as in ADK; criteria that do not read responses ignore it.",
    )

    def sampling(self) -> str | None:
        """How the judge's samples were drawn, when not all of them (`"early_stop"`); None for
        full sampling and for criteria without samples. Results record it per criterion."""
        return None

    def score_invocation(self, actual: Invocation, expected: Invocation | None) -> Outcome:
        raise NotImplementedError(f"{self.name} does not score invocations")

    def score_invocations(self, actual: list[Invocation], expected: list[Invocation] | None) -> list[Outcome]:
        """One outcome per invocation. Invocations are scored one by one unless a criterion
        needs the conversation so far (multi-turn metrics), which overrides this."""
        pairs = zip(actual, expected if expected is not None else [None] * len(actual))
        return [self.score_invocation(a, e) for a, e in pairs]

    def score_case(self, actual: list[Invocation], expected: list[Invocation] | None, scenario: dict[str, Any] | None) -> CaseOutcome:
        """Scope "case": the whole conversation at once."""
        raise NotImplementedError(f"{self.name} does not score whole cases")

    def score_trace(self, trace: Any) -> Outcome:
        raise NotImplementedError(f"{self.name} does not score traces")

    def score_acli(self, case: Any, run: Any) -> CaseOutcome:
        """Input kind "acli": one run of an agents-cli dataset case (evalgate.criteria.acli)."""
        raise NotImplementedError(f"{self.name} does not score agents-cli cases")

    def scale(self) -> tuple[float | None, float | None] | None:
        """The scale of this criterion's scores when it is its own, not its class's
        `score_range` (None at an unbounded end); None: the class's. Results record it."""
        return None

    def requires(self) -> list[tuple[str, str]]:
        """(module, extra) pairs this criterion needs installed; checked before anything runs,
        so a missing extra is a setup error rather than a run of NOT_EVALUATED cases."""
        needs = {"gemini": ("google.genai", "judge"), "vertex": ("google.cloud.aiplatform_v1beta1", "vertex")}
        return [needs[self.service]] if self.judge and self.service in needs else []

    def options(self) -> dict[str, Any]:
        """Parameters other than the threshold, as they go into results and digests."""
        return self.model_dump(mode="json", exclude={"threshold"})


REGISTRY: dict[str, type[Criterion]] = {}


def criterion(cls: type[Criterion]) -> type[Criterion]:
    """Class decorator: register a criterion under its (ADK) metric name."""
    if cls.name in REGISTRY:
        raise RuntimeError(f"criterion {cls.name!r} registered twice")
    REGISTRY[cls.name] = cls
    return cls
