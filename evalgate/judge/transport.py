"""Transport of judge requests: google-genai for LLM judges, google-cloud-aiplatform's EvaluationServiceClient for Vertex AI metrics.

Which backend and credentials each client uses, how a request is built and sent (one HTTP
attempt, the client's own retries off), and what a response or a raised error means: a
result, or an error and whether another attempt may help (`evalgate.judge.retry`). Both SDKs
are imported only when a request is made.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Optional

from evalgate import reasons
from evalgate.judge.request import JudgeRequest
from evalgate.judge.retry import Outcome, Transport, retry_after, retryable_status
from evalgate.vertex.service import EvalRequest

NO_CREDENTIALS = reasons.NO_JUDGE_CREDENTIALS  # shown translated by the reports (evalgate.reasons)
INSTALL_HINT = "the judge needs google-genai, which is not installed: pip install 'adk-evalgate[judge]'"
NO_VERTEX_CREDENTIALS = "no Vertex AI credentials"  # every such evaluate() error starts with this
VERTEX_INSTALL_HINT = (
    "Vertex AI metrics need google-cloud-aiplatform, which is not installed: pip install 'adk-evalgate[vertex]'"
)

_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
_FINISHED = {None, "", "STOP", "FINISH_REASON_UNSPECIFIED"}
_BLOCKED = {
    "SAFETY", "RECITATION", "LANGUAGE", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
    "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION",
}
# HTTP statuses that say the service (or its credentials, or the model the base's criteria
# name) is unusable, whatever was asked: the request's failure is not the case's doing.
_SERVICE_CODES = (401, 403, 404)

_HINTS = {
    400: "check judge_model and judge_model_config",
    401: "check the judge credentials",
    403: "check the judge credentials and that the API is enabled for them",
    404: "check judge_model: the model was not found",
}
_VERTEX_HINTS = {
    400: "check the metric name and the instance sent",
    401: "check the Vertex AI credentials",
    403: "check the Vertex AI credentials and that the Vertex AI API is enabled in the project",
    404: "check the project, the location and the metric name",
}


@dataclass(frozen=True)
class Backend:
    vertex: bool
    project: Optional[str] = None
    location: Optional[str] = None
    api_key: Optional[str] = field(default=None, repr=False)
    credentials: Any = field(default=None, repr=False)


@dataclass(frozen=True)
class VertexSetup:
    project: str
    location: str
    endpoint: str  # host[:port], or a URL with its scheme (http:// for a local server)
    credentials: Any = field(default=None, repr=False)


# --- LLM judges (google-genai) ---------------------------------------------------------------------


def gemini_transport(client: Any, request: JudgeRequest) -> tuple[Optional[Transport], Optional[str]]:
    """How to send `request` with a google-genai client, or why it cannot be sent (its settings)."""
    from google.genai import types

    settings, problem = _settings(request)
    if problem is not None:
        return None, problem

    def send(timeout: float) -> Any:
        config = types.GenerateContentConfig(
            **settings,
            http_options=types.HttpOptions(
                timeout=max(1, int(timeout * 1000)),  # milliseconds
                retry_options=types.HttpRetryOptions(attempts=1),  # our loop is the only retry
            ),
        )
        return client.models.generate_content(model=request.model, contents=request.prompt, config=config)

    return Transport(send, _classify, _read), None


def _env_true(env: Any, name: str) -> Optional[bool]:
    value = env.get(name)
    return None if value is None else value.strip().lower() in ("true", "1")


def resolve_backend(env: Any) -> tuple[Optional[Backend], Optional[str]]:
    """Which backend google-genai would use, with what; or why there are no credentials."""
    api_key = (env.get("GOOGLE_API_KEY") or env.get("GEMINI_API_KEY") or "").strip() or None
    enterprise = _env_true(env, "GOOGLE_GENAI_USE_ENTERPRISE")  # google-genai: the newer name wins
    vertex = enterprise if enterprise is not None else _env_true(env, "GOOGLE_GENAI_USE_VERTEXAI")
    if not vertex:
        return (Backend(False, api_key=api_key), None) if api_key else (None, NO_CREDENTIALS)
    project = (env.get("GOOGLE_CLOUD_PROJECT") or "").strip() or None
    location = (env.get("GOOGLE_CLOUD_LOCATION") or "").strip() or None
    if api_key and not project and not location:  # Vertex AI express mode
        return Backend(True, api_key=api_key), None
    adc = _application_default_credentials()
    if adc is None:
        return None, INSTALL_HINT
    credentials, adc_project, missing = adc
    if missing:
        return None, (
            f"{NO_CREDENTIALS} (GOOGLE_GENAI_USE_VERTEXAI is set, but no Application Default Credentials "
            f"were found: {missing})"
        )
    project = project or adc_project
    if not project:
        return None, f"{NO_CREDENTIALS} (GOOGLE_CLOUD_PROJECT is not set and the credentials name no project)"
    return Backend(True, project=project, location=location or "global", credentials=credentials), None


def make_client(backend: Optional[Backend]) -> Any:
    """A google-genai Client for `backend`, with google-genai's own retries off.

    Project, location and `vertexai=True` are passed explicitly: google-genai reads
    GOOGLE_VERTEX_BASE_URL only when `vertexai=True` is an argument, and with a custom
    base URL it drops the `projects/{p}/locations/{l}` path unless both are arguments.
    """
    from google import genai
    from google.genai import types

    assert backend is not None, "credentials() resolves the backend first"
    options = types.HttpOptions(retry_options=types.HttpRetryOptions(attempts=1))
    if not backend.vertex:
        return genai.Client(vertexai=False, api_key=backend.api_key, http_options=options)
    if backend.api_key and not backend.project:
        return genai.Client(vertexai=True, api_key=backend.api_key, http_options=options)
    return genai.Client(
        vertexai=True,
        project=backend.project,
        location=backend.location,
        credentials=backend.credentials,
        http_options=options,
    )


def _settings(request: JudgeRequest) -> tuple[dict[str, Any], Optional[str]]:
    """GenerateContentConfig fields for `request` (generation settings in either casing), or a problem."""
    from google.genai import types
    from pydantic import ValidationError

    settings = {_snake(str(name)): value for name, value in request.config}
    settings.pop("http_options", None)  # ours: timeout and no SDK retries
    settings["response_mime_type"] = "application/json"
    if request.system:
        settings["system_instruction"] = request.system
    if request.response_schema is not None:
        settings.pop("response_schema", None)
        settings["response_json_schema"] = request.response_schema
    try:
        types.GenerateContentConfig(**settings)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()))
            if err.get("type") == "extra_forbidden":
                problems.append(f"unknown setting {where!r}")
            else:
                problems.append(f"{where}: {err.get('msg')}")
        return settings, f"judge_model_config: {'; '.join(problems)}. Use google-genai GenerateContentConfig fields."
    return settings, None


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _classify(exc: Exception, timeout: float) -> Outcome:
    """What a client exception means, and whether another attempt may help."""
    from google.genai import errors

    if isinstance(exc, errors.APIError):
        code = int(exc.code or 0)
        text = _http_text(code, exc.status, str(exc.message) if exc.message else None, _HINTS)
        retryable = retryable_status(code)
        return Outcome(error=f"judge request failed: {text}", retryable=retryable,
                        retry_after=retry_after(exc) if retryable else None, down=retryable or code in _SERVICE_CODES)
    timeouts, network = _transient_types()
    if isinstance(exc, timeouts):
        return Outcome(error=f"judge request failed: no answer within {timeout:g} s (timeout)", retryable=True, down=True)
    if isinstance(exc, network):
        return Outcome(error=f"judge request failed: network error ({type(exc).__name__}: {short(exc)})",
                        retryable=True, down=True)
    auth = _classify_auth(exc, "judge")
    if auth is not None:
        return auth
    if isinstance(exc, ValueError) and (type(exc).__name__ in ("JSONDecodeError", "ValidationError")):
        return Outcome(error=f"judge reply is not a generateContent response ({type(exc).__name__}: {short(exc)})", down=True)
    return Outcome(error=f"judge request failed: {type(exc).__name__}: {short(exc)}")


def _classify_auth(exc: Exception, who: str) -> Optional[Outcome]:
    """A google-auth failure (refreshing the token) as an outcome, or None if `exc` is not one."""
    try:
        import google.auth.exceptions as auth_errors
    except ImportError:  # pragma: no cover - google-auth comes with both clients
        return None
    if isinstance(exc, auth_errors.RefreshError):
        return Outcome(error=f"{who} credentials could not be refreshed: {short(exc)}", down=True)
    if isinstance(exc, auth_errors.TransportError):
        return Outcome(error=f"{who} credentials: the token endpoint was not reachable ({short(exc)})",
                        retryable=True, down=True)
    return None


def _transient_types() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """(timeouts, network errors) of the HTTP libraries google-genai may use."""
    timeouts: list[type] = []
    network: list[type] = []
    for module_name in ("httpx", "httpx2"):
        try:
            module = __import__(module_name)
        except ImportError:
            continue
        timeouts += [getattr(module, "TimeoutException")] if hasattr(module, "TimeoutException") else []
        network += [getattr(module, n) for n in ("NetworkError", "RemoteProtocolError") if hasattr(module, n)]
    return tuple(timeouts), tuple(network)



def _read(response: Any) -> Outcome:
    """Text and usage from a GenerateContentResponse, or why it carries no usable text."""
    usage = _usage(getattr(response, "usage_metadata", None))
    feedback = getattr(response, "prompt_feedback", None)
    block = _name(getattr(feedback, "block_reason", None)) if feedback is not None else None
    if block:
        message = getattr(feedback, "block_reason_message", None)
        return Outcome(error=f"judge refused the prompt (promptFeedback.blockReason {block}"
                        + (f": {one_line(message)})" if message else ")"), usage=usage)
    candidates = getattr(response, "candidates", None) or []
    if not candidates:
        return Outcome(error="judge returned no candidates", usage=usage)
    candidate = candidates[0]
    parts = getattr(getattr(candidate, "content", None), "parts", None) or []
    text = "".join(p.text for p in parts if getattr(p, "text", None) and not getattr(p, "thought", None))
    reason = _name(getattr(candidate, "finish_reason", None))
    if reason not in _FINISHED:
        message = getattr(candidate, "finish_message", None)
        detail = f": {one_line(message)}" if message else ""
        if reason == "MAX_TOKENS":
            error = ("judge reply cut off at the output token limit (finishReason MAX_TOKENS); "
                     "raise max_output_tokens in judge_model_config")
        elif reason in _BLOCKED:
            error = f"judge reply blocked (finishReason {reason}{detail})"
        else:
            error = f"judge reply stopped early (finishReason {reason}{detail})"
        return Outcome(error=error, usage=usage)
    if not text.strip():
        return Outcome(error="judge returned an empty reply", usage=usage)
    return Outcome(text=text, usage=usage)


def _usage(metadata: Any) -> dict[str, int]:
    if metadata is None:
        return {}
    prompt = getattr(metadata, "prompt_token_count", None) or 0
    output = (getattr(metadata, "candidates_token_count", None) or 0) + (
        getattr(metadata, "thoughts_token_count", None) or 0
    )
    total = getattr(metadata, "total_token_count", None) or prompt + output
    return {"prompt_tokens": int(prompt), "output_tokens": int(output), "total_tokens": int(total)}


def _name(value: Any) -> Optional[str]:
    if value is None:
        return None
    return str(getattr(value, "value", value))


def _http_text(code: int, status: Optional[str], message: Optional[str], hints: dict[int, str]) -> str:
    """`HTTP 429 RESOURCE_EXHAUSTED: <message> (<what to do>)`."""
    text = f"HTTP {code}" + (f" {status}" if status else "")
    if message:
        text += f": {one_line(message)}"
    if code in hints:
        text += f" ({hints[code]})"
    return text


def one_line(text: Any) -> str:
    return " ".join(str(text).split())


def short(exc: BaseException, limit: int = 300) -> str:
    text = one_line(exc) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"



# --- Vertex AI evaluations (google-cloud-aiplatform) -----------------------------------------------

_LOCATION_HELP = (
    "set GOOGLE_CLOUD_LOCATION (e.g. us-central1) or vertex_location; google-github-actions/auth "
    "exports GOOGLE_CLOUD_PROJECT but not GOOGLE_CLOUD_LOCATION"
)

# google.rpc.Code of a row-level error, as the HTTP status it stands for (for `retryable_status`).
_RPC_AS_HTTP = {
    1: 499, 2: 500, 3: 400, 4: 504, 5: 404, 6: 409, 7: 403, 8: 429, 9: 400, 10: 409, 11: 400,
    12: 501, 13: 500, 14: 503, 15: 500, 16: 401,
}
_RPC_NAMES = {
    1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND",
    6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
    10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE",
    15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}


def vertex_transport(client: Any, setup: VertexSetup, request: EvalRequest,
                     instance: Any) -> tuple[Optional[Transport], Optional[str]]:
    """How to send one evaluateInstances request, or why `instance` is not one."""
    from google.cloud.aiplatform_v1beta1 import EvaluateInstancesRequest
    from google.protobuf import json_format

    payload = {
        "location": f"projects/{setup.project}/locations/{setup.location}",
        "metrics": [json.loads(request.metric_spec_json) if request.metric_spec_json
                    else {"predefined_metric_spec": {"metric_spec_name": request.metric}}],
        "instance": instance,
    }
    if request.autorater_config_json is not None:
        payload["autorater_config"] = json.loads(request.autorater_config_json)
    try:
        built = EvaluateInstancesRequest.from_json(json.dumps(payload), ignore_unknown_fields=False)
    except json_format.ParseError as exc:
        return None, f"{request.criterion}: the instance is not a Vertex AI evaluateInstances instance ({short(exc)})"

    def send(timeout: float) -> Any:
        return client.evaluate_instances(request=built, retry=None, timeout=timeout)  # our loop is the only retry

    return Transport(send, _classify_vertex, lambda response: read_vertex(response, request.metric)), None


def resolve_vertex(env: Any, project: Optional[str], location: Optional[str], endpoint: Optional[str],
                   credentials: Any) -> tuple[Optional[VertexSetup], Optional[str]]:
    """Project, location, endpoint and credentials for evaluateInstances; or everything missing."""
    project = (project or env.get("GOOGLE_CLOUD_PROJECT") or "").strip() or None
    location = (location or env.get("GOOGLE_CLOUD_LOCATION") or "").strip() or None
    problems = []
    if credentials is None:
        adc = _application_default_credentials()
        if adc is None:
            return None, VERTEX_INSTALL_HINT
        credentials, adc_project, missing = adc
        if missing:
            problems.append(
                f"no Application Default Credentials were found ({missing}); in GitHub Actions, "
                "run google-github-actions/auth first (with permissions: id-token: write)"
            )
        else:
            project = project or adc_project
    if not project:
        problems.append("no project: set GOOGLE_CLOUD_PROJECT or vertex_project")
    if not location:
        problems.append(f"no location: {_LOCATION_HELP}")
    if problems:
        return None, f"{NO_VERTEX_CREDENTIALS}: {'; '.join(problems)}"
    assert project is not None and location is not None
    return VertexSetup(project, location, endpoint or _regional_endpoint(location), credentials), None


def _application_default_credentials() -> Optional[tuple[Any, Optional[str], Optional[str]]]:
    """(credentials, their project, why there are none) from google-auth's ADC lookup, the one
    both Gemini-on-Vertex and the evaluation service use; None when google-auth is missing."""
    try:
        import google.auth
        import google.auth.exceptions
    except ImportError:
        return None
    try:
        credentials, project = google.auth.default(scopes=_SCOPES)
    except google.auth.exceptions.DefaultCredentialsError as exc:
        return None, None, short(exc)
    return credentials, project, None


def _regional_endpoint(location: str) -> str:
    if location == "global":
        return "aiplatform.googleapis.com"
    if location in ("us", "eu"):  # multi-region endpoints, as vertexai.Client uses them
        return f"aiplatform.{location}.rep.googleapis.com"
    return f"{location}-aiplatform.googleapis.com"


def make_vertex_client(setup: Optional[VertexSetup]) -> Any:
    """google-cloud-aiplatform's low-level EvaluationServiceClient, on REST (HTTP/JSON).

    REST rather than gRPC: errors carry the HTTP status and the Retry-After header our retry
    loop honours, and a local HTTP server can stand in for the service in tests.
    """
    from google.api_core.client_options import ClientOptions
    from google.cloud.aiplatform_v1beta1 import EvaluateInstancesRequest, EvaluateInstancesResponse
    from google.cloud.aiplatform_v1beta1 import EvaluationServiceClient

    assert setup is not None, "vertex_credentials() resolves the setup first"
    fields = set(EvaluateInstancesRequest.meta.fields) | set(EvaluateInstancesResponse.meta.fields)
    if not {"metrics", "instance", "metric_results"} <= fields:  # managed metrics came late to v1beta1
        from google.cloud.aiplatform_v1beta1 import gapic_version

        raise ClientTooOld(
            f"google-cloud-aiplatform {gapic_version.__version__} has no managed-metric evaluateInstances "
            "(metrics, instance, metric_results): pip install --upgrade 'adk-evalgate[vertex]'"
        )
    return EvaluationServiceClient(
        credentials=setup.credentials,
        transport="rest",
        client_options=ClientOptions(api_endpoint=setup.endpoint),
    )


class ClientTooOld(Exception):
    """The installed google-cloud-aiplatform predates managed metrics in evaluateInstances."""


def _classify_vertex(exc: Exception, timeout: float) -> Outcome:
    """What an EvaluationServiceClient (REST) exception means, and whether another attempt may help."""
    import requests
    from google.api_core import exceptions as core

    if isinstance(exc, core.GoogleAPICallError) and exc.code is not None:
        code = int(exc.code)
        status, message = _error_body(exc)
        text = _http_text(code, status, message, _VERTEX_HINTS)
        retryable = retryable_status(code)
        return Outcome(error=f"Vertex AI evaluation request failed: {text}", retryable=retryable,
                        retry_after=retry_after(exc) if retryable else None, down=retryable or code in _SERVICE_CODES)
    if isinstance(exc, requests.exceptions.Timeout):
        return Outcome(error=f"Vertex AI evaluation request failed: no answer within {timeout:g} s (timeout)",
                        retryable=True, down=True)
    if isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError)):
        return Outcome(error=f"Vertex AI evaluation request failed: network error ({type(exc).__name__}: "
                              f"{short(exc)})", retryable=True, down=True)
    auth = _classify_auth(exc, "Vertex AI")
    if auth is not None:
        return auth
    from google.protobuf import json_format

    if isinstance(exc, (ValueError, json_format.ParseError)):  # a 200 that is not an EvaluateInstancesResponse
        return Outcome(error=f"Vertex AI reply is not an evaluateInstances response ({type(exc).__name__}: "
                              f"{short(exc)})", down=True)
    return Outcome(error=f"Vertex AI evaluation request failed: {type(exc).__name__}: {short(exc)}")


def _error_body(exc: Any) -> tuple[Optional[str], Optional[str]]:
    """(status, message) of a Google API error body, falling back to the exception's message."""
    status = message = None
    try:
        error = exc.response.json().get("error")
    except Exception:  # no response, or not JSON
        error = None
    if isinstance(error, dict):
        status = error.get("status") if isinstance(error.get("status"), str) else None
        message = error.get("message") if isinstance(error.get("message"), str) else None
    return status, (message or getattr(exc, "message", None))


def read_vertex(response: Any, metric: str) -> Outcome:
    """Score, explanation and rubric verdicts from an EvaluateInstancesResponse, or why there are none.

    A row-level error (`metric_results[0].error` with a non-zero code) is an error with the
    service's message; it is retryable when its code is a transient one.
    """
    results = list(getattr(response, "metric_results", None) or [])
    if not results:
        return Outcome(error=f"Vertex AI returned no metric result for {metric}")
    row = results[0]
    if "error" in row and row.error.code:
        code = int(row.error.code)
        name = _RPC_NAMES.get(code)
        message = one_line(row.error.message) or "no message"
        return Outcome(
            error=f"Vertex AI could not evaluate {metric} for this instance: {message} "
                  f"(code {code}{' ' + name if name else ''})",
            retryable=retryable_status(_RPC_AS_HTTP.get(code, code)),
            down=retryable_status(_RPC_AS_HTTP.get(code, code)) or _RPC_AS_HTTP.get(code, code) in _SERVICE_CODES,
        )
    if "score" not in row:
        return Outcome(error=f"Vertex AI returned no score for {metric}")
    verdicts = [
        {
            "rubric_id": v.evaluated_rubric.rubric_id,
            "description": v.evaluated_rubric.content.property.description,
            "verdict": bool(v.verdict),
            "reasoning": v.reasoning,
        }
        for v in row.rubric_verdicts
    ]
    explanation = row.explanation if "explanation" in row else None
    return Outcome(value={"score": _float32(row.score), "explanation": explanation, "rubric_verdicts": verdicts})


def _float32(value: float) -> float:
    """The shortest decimal that is this float32 (`score` is a proto float): 0.7, not 0.699999988."""
    exact = struct.unpack("f", struct.pack("f", value))[0]
    for digits in range(1, 10):
        shortest = float(f"{exact:.{digits}g}")
        if struct.unpack("f", struct.pack("f", shortest))[0] == exact:
            return shortest
    return exact

