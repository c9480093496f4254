"""Google's agents-cli projects: their datasets, traces, eval configs and results files.

agents-cli (package google-agents-cli) keeps eval cases as the Agent Platform SDK's
`EvaluationDataset`, not as ADK eval sets. This package reads and writes those files and
converts them to and from the ADK invocations the rest of evalgate scores. Nothing here
imports the SDK, google-adk or google-genai.
"""
