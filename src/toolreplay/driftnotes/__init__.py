"""The drift-note guard: over a staged change for the pre-commit hooks (docs/spec.md §6), and
over a pull request's range for ``check --base`` and the Action (``drift_range``)."""
