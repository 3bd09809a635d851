"""The optional extras: the library each one brings and the message that says how to get it.

Each heavy optional library (the MCP SDK, cryptography, PyGithub, OpenTelemetry) is imported
only where it is used, behind :func:`require` (or :func:`installed` where its absence is not
an error), so a command that does not need it never pays for it and a user who lacks it is
told which extra to install. ruff's TID253 keeps the libraries out of module-level imports.
"""

from __future__ import annotations

from importlib.util import find_spec

from toolreplay.errors import InputError, ToolreplayError

#: extra -> (the top-level module it installs, how a message names it)
EXTRAS: dict[str, tuple[str, str]] = {
    "github": ("github", "PyGithub"),
    "inspect": ("zstandard", "the 'zstandard' package"),
    "mcp": ("mcp", "the MCP SDK"),
    "otel": ("opentelemetry", "the OpenTelemetry API"),
    "sign": ("cryptography", "the optional 'cryptography' package"),
}


def install_hint(extra: str) -> str:
    """The pip command that installs ``extra``."""
    return f"pip install 'toolreplay[{extra}]'"


def installed(extra: str, modules: tuple[str, ...] = ()) -> bool:
    """Whether the library of ``extra`` can be imported (found without importing it), and with it
    ``modules``: what else of the extra a feature needs (a package's parent is imported to look)."""
    for name in (EXTRAS[extra][0], *modules):
        try:
            if find_spec(name) is None:
                return False
        except ModuleNotFoundError:  # the parent package of a dotted name is missing
            return False
    return True


def require(
    extra: str,
    what: str,
    *,
    error: type[ToolreplayError] = InputError,
    modules: tuple[str, ...] = (),
    needs: str = "",
) -> None:
    """Refuse ``what`` (a command, a feature) with the install hint when ``extra`` (with the
    ``modules`` it needs of it, which ``needs`` names for the message) is missing."""
    if not installed(extra, modules):
        raise error(f"{what} needs {needs or EXTRAS[extra][1]}: {install_hint(extra)}")
