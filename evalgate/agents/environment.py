"""The environment an agent's process gets: evalgate's own, without the GitHub token and the runner's credentials.

A `command` agent, and the action's `pip install` of the project, run the code under test.
In a pull request that code is the pull request's: it must not be handed what would let it
write to the repository (the GitHub token), reach the runner's cache, artifacts and OIDC
services (`ACTIONS_*`: ACTIONS_RUNTIME_TOKEN, ACTIONS_ID_TOKEN_REQUEST_TOKEN, ...), or read
the action's inputs (`INPUT_*`, among them the token). The agent's own keys (its model's
GOOGLE_API_KEY, say) stay: the agent needs them.
"""

from __future__ import annotations

import os
import re
from typing import Iterable, Mapping, MutableMapping, Optional

# Named here because they hold the GitHub token in Actions; GH_TOKEN is the gh CLI's.
TOKEN_VARIABLES = ("GITHUB_TOKEN", "GH_TOKEN", "EVALGATE_GITHUB_TOKEN")
WITHHELD_PREFIXES = ("ACTIONS_", "INPUT_")
_SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD", re.IGNORECASE)


def withheld(name: str) -> bool:
    """Whether an agent's process may not see the variable `name`."""
    upper = name.upper()
    return upper in TOKEN_VARIABLES or upper.startswith(WITHHELD_PREFIXES)


# The values `withhold` removed from this process's environment: once they are gone from it,
# a copy under another name (MY_TOKEN: ${{ github.token }}) is known by its value only.
_withheld_values: set[str] = set()


def agent_environment(env: Optional[Mapping[str, str]] = None, secrets: Iterable[str] = ()) -> dict[str, str]:
    """`env` (default: this process's) without the withheld variables, nor any variable
    whose value is one of theirs or one of `secrets` (the token copied under another name)."""
    env = os.environ if env is None else env
    values = {v for k, v in env.items() if withheld(k) and len(v) >= 8} | {s for s in (*secrets, *_withheld_values) if s and len(s) >= 8}
    return {k: v for k, v in env.items() if not withheld(k) and v not in values}


def withhold(env: MutableMapping[str, str]) -> list[str]:
    """Remove the withheld variables from `env` in place (the action's own process, so that
    an in-process agent does not find them there either); returns the values of those whose
    names say they are secrets (ACTIONS_RUNTIME_TOKEN, INPUT_GITHUB-TOKEN, ...), to redact."""
    removed = {name: env.pop(name) for name in [k for k in env if withheld(k)]}
    _withheld_values.update(v for v in removed.values() if len(v) >= 8)
    for name in [k for k, v in env.items() if v in _withheld_values]:  # the same values under other names
        removed[name] = env.pop(name)
    return [value for name, value in removed.items() if _SECRET_NAME.search(name) and value]
