from . import agent  # noqa: F401  (ADK's layout: the folder's package exposes `agent`)
