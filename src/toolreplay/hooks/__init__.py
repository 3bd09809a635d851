"""What the pre-commit hooks run: the drift-note guard over a staged change (docs/spec.md §6)."""
