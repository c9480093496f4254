"""`python -P -m entrypoint`: run the action."""

from entrypoint.main import main

raise SystemExit(main(__import__("sys").argv[1:]))
