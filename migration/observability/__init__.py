"""Metrics, logging and progress reporting."""
