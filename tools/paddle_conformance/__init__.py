"""Running Paddle 1.x's own unit tests and book tests against fluidist (tools/paddle_tests.py)."""
