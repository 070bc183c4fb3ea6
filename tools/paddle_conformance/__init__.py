"""Runs Paddle's own Python unit tests against fluidist (``tools/paddle_tests.py`` is the command)."""
