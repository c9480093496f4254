"""Readers for the files evalgate scores: eval sets, actual outputs, traces."""
