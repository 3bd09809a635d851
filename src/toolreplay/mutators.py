"""The tools that change state unless a configuration or a tool lock says otherwise (docs/spec.md
§3.2), in a module of their own: the configuration needs them to start, and importing them
from the replay analysis would make every hook load the JSON decoders."""

from __future__ import annotations

DEFAULT_MUTATORS = frozenset({"write_file", "delete_file", "create_file", "move_file", "run_command"})
