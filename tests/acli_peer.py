"""Run agents-cli's own command line (google-agents-cli, a reference peer) in a subprocess:
`python tests/acli_peer.py eval grade ...` is `agents-cli eval grade ...`.

One thing differs, and only with EVALGATE_FAKE_AGENT_PLATFORM_URL set: the Agent Platform
client agents-cli builds (`agentplatform.Client`, for the eval service) is given that URL as
its `http_options.base_url`, so its requests reach a fake service on 127.0.0.1 instead of
Google. The client ignores GOOGLE_VERTEX_BASE_URL when given a project and a location, as
agents-cli gives it (tests/test_vertex_multi_turn.py does the same for ADK's facade).
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    url = os.environ.get("EVALGATE_FAKE_AGENT_PLATFORM_URL")
    if url:
        import agentplatform

        real = agentplatform.Client

        def to_fake(*args, http_options=None, **kwargs):
            options = dict(http_options or {})
            options["base_url"] = url
            return real(*args, http_options=options, **kwargs)

        agentplatform.Client = to_fake
    from google.agents.cli.main import main as agents_cli

    sys.argv[0] = "agents-cli"
    return agents_cli()


if __name__ == "__main__":
    sys.exit(main())
