"""Vertex AI Gen AI evaluation service: managed metrics through evaluateInstances."""
