"""evalgate: a CI gate for LLM agents."""

__version__ = "0.1.0"
