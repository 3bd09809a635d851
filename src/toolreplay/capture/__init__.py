"""Live capture over MCP: the recording proxy, the snapshot server and the live probe (docs/capture.md).

Everything here needs the MCP SDK (``pip install 'toolreplay[mcp]'``); the CLI imports
these modules only inside the commands that use them.
"""

from __future__ import annotations
