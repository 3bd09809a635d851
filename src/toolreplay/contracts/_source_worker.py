"""The child process that runs a project's ``tools_source`` (:mod:`toolreplay.contracts.runner`).

Started as ``python -P -B -m toolreplay.contracts._source_worker REQUEST``, where REQUEST is
a JSON object: ``{"python": "module:object", "root": FOLDER, "version": V, "mutators": [...]}``
or ``{"mcp": [ARGV...], "timeout": SECONDS}``. Its one answer is a JSON document written to
the stdout it started with: ``{"lock": LOCK}`` (a module's tools, fingerprinted here, where
their code runs), ``{"tools": [...], "version": V}`` (an MCP server's ``tools/list`` and its
``serverInfo.version``; the server gets this child's environment), or ``{"error":
PROBLEM}`` with exit status 2. Whatever the project's code prints goes to stderr, so it
cannot run into the answer by accident; the parent reads the answer as untrusted data anyway.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from toolreplay.confine import confine
from toolreplay.contracts.definitions import import_definitions
from toolreplay.contracts.lock import ToolLock, dump_lock
from toolreplay.contracts.mcp import list_mcp_server, listed_definitions
from toolreplay.contracts.python import load_object, python_lock
from toolreplay.errors import InputError
from toolreplay.limits import raised_recursion_limit


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    if "mcp" in request:
        tools, version = list_mcp_server(request["mcp"], timeout=float(request["timeout"]))
        # the parent checks the answer again; checking here too names the tool whose schema it
        # cannot take (a schema nested near the decoder's limit is too deep once wrapped in the answer)
        imported = import_definitions(listed_definitions(tools, path=""), version="", path="")
        dump_lock(ToolLock.of(imported.contracts))
        return {"tools": tools, "version": version}
    root = request["root"]
    if root not in sys.path:
        sys.path.insert(0, root)
    spec = request["python"]
    lock = python_lock(
        load_object(spec), version=request["version"], mutators=frozenset(request["mutators"]), spec=spec
    )
    return {"lock": json.loads(dump_lock(lock))}


def main() -> int:
    request = json.loads(sys.argv[1])
    # before any of the project's code is imported: namespaces of its own, the judge's files read-only
    outside = confine(request.get("readonly", ()))
    if outside is not None:
        return outside
    answer = os.fdopen(os.dup(1), "w", encoding="ascii")
    os.dup2(2, 1)  # the project's prints land on stderr, not in the answer
    try:
        with raised_recursion_limit():  # as the command line gives every command (cli.base)
            result = _answer(request)
        code = 0
    except InputError as err:
        result, code = {"error": err.problem, "pointer": err.pointer}, 2
    answer.write(json.dumps(result, ensure_ascii=True, allow_nan=False))
    answer.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
