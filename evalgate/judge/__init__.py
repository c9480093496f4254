"""LLM judges on Gemini: one run-wide runtime (pool, rate cap, retries, cache) shared by every judge criterion."""
