"""fluidist's version: read by the package (``fluidist.__version__``), the launcher (``--version``) and
the packaging (``pyproject.toml``'s dynamic version), without importing the framework."""
__version__ = "0.1.0"
