"""Python MCP servers started warm: forked from a process that has already imported the MCP SDK.

Every Python MCP server the tests start (mcp-server-time, mcp-server-git, the SDK-built test
servers in tests/data/mcp) spends about 0.9 s of CPU importing the SDK before it reads a line;
the suite starts about a hundred of them. Here a *zygote* imports the SDK and those servers once
per test run, and each start forks it: the server's own code then runs as it would have, in
a process of its own, reading and writing the very pipes the caller gave it.

The caller (``record``, ``probe``, the SDK's client) starts a *launcher* instead of the server:
a small script named like the server (``…/mcp-server-time``, ``…/server.py``) that hands its
standard streams, arguments, environment and folder to the zygote over a Unix socket, then stands
in for the server's process: it passes on SIGTERM, SIGINT and SIGHUP, and ends as the server
ended (its exit status, or killed by the same signal). A launcher that is killed outright
(SIGKILL, which cannot be passed on) takes its server with it: the zygote sees the socket close.

What differs from an exec'd server: the process that holds the pipes is the zygote's child, not
the launcher (so ``pgrep -f`` on the server's arguments does not find it), and the interpreter's
start-up options are the zygote's. Tests about those start their servers cold. So does every
test when ``TOOLREPLAY_COLD_SERVERS`` is set, and in CI (where ``CI`` is set), which judges with
servers run exactly as users run them.

This module is both halves: ``python prefork.py zygote SOCKET OWNER MODULE...`` is the zygote
(it imports the modules, and ends when process OWNER ends), and a launcher is
this file with its socket and target written in (:func:`launcher_text`). Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import time

#: seconds a launcher waits for its zygote to listen
STARTING = 60
#: the signals a launcher passes on to its server (what record, the SDK and process groups send)
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: the largest request a launcher sends: its arguments and environment as JSON
MAX_REQUEST = 1 << 20


# --- the launcher --------------------------------------------------------------------------------


def launch(address: str, script: str) -> None:
    """Run ``script`` (with this process's arguments, environment, folder and standard streams)
    in a child of the zygote at ``address``, and end as it ends."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for _ in range(STARTING * 50):  # the zygote may still be starting: it listens first thing
        try:
            client.connect(address)
            break
        except (FileNotFoundError, ConnectionRefusedError):
            time.sleep(0.02)
    else:
        sys.stderr.write(f"prefork: no zygote listening at {address}\n")
        os._exit(127)
    request = {"script": script, "argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(client, [json.dumps(request).encode()], [0, 1, 2])
    # the server holds the streams now: this process keeps none open (a caller waiting for the
    # server's output to end must not wait for the launcher)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    pid = _answer(client)["pid"]

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    status = _answer(client).get("status")
    if status is None:  # the zygote went away
        os._exit(1)
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _answer(client: socket.socket) -> dict[str, int]:
    data = client.recv(4096)
    return json.loads(data) if data else {}


def launcher_text(address: str, script: str) -> str:
    """The source of a launcher for ``script`` (an executable file: the interpreter's ``-S`` keeps
    it quick, it needs the standard library only)."""
    return (
        f"#!{sys.executable} -S\n"
        "import sys\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        "from prefork import launch\n"
        f"launch({address!r}, {script!r})\n"
    )


# --- the zygote ----------------------------------------------------------------------------------


def zygote(address: str, owner: int, preload: list[str]) -> None:
    """Import ``preload``, listen at ``address``, and fork a server for each launcher that asks,
    until process ``owner`` (the test run) ends."""
    import gc
    import importlib
    import selectors

    try:
        ending = os.pidfd_open(owner)
    except ProcessLookupError:
        return
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(address)
    listener.listen(64)  # launchers that come while the imports run wait in the backlog
    for name in preload:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()  # the children do not walk (and so copy) what was imported here
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    selector.register(ending, selectors.EVENT_READ, ("owner", owner))  # readable: the tests are over
    launchers: dict[int, socket.socket] = {}  # child pid -> its launcher's socket
    pidfds: dict[int, int] = {}  # child pid -> its pidfd
    while True:
        for key, _events in selector.select():
            if key.data is None:
                conn, _ = listener.accept()
                pid = _fork(conn, listener, selector, launchers, pidfds)
                if pid:
                    launchers[pid] = conn
                    pidfds[pid] = os.pidfd_open(pid)
                    selector.register(pidfds[pid], selectors.EVENT_READ, ("exited", pid))
                    selector.register(conn, selectors.EVENT_READ, ("launcher", pid))
                continue
            what, pid = key.data
            if what == "owner":
                os._exit(0)  # the servers still running get SIGKILL (their parent-death signal)
            if pid not in launchers:
                continue  # reaped earlier in this round (its launcher's socket is closed)
            if what == "launcher":  # the launcher closed its end (it was killed): so is its server
                selector.unregister(key.fileobj)
                os.kill(pid, signal.SIGKILL)  # not reaped yet, so the pid is still the server's
                continue
            _, status = os.waitpid(pid, 0)
            selector.unregister(pidfds[pid])
            os.close(pidfds.pop(pid))
            conn = launchers.pop(pid)
            with contextlib.suppress(KeyError):
                selector.unregister(conn)
            with contextlib.suppress(OSError):
                conn.send(json.dumps({"status": status}).encode())
            conn.close()


def _fork(
    conn: socket.socket,
    listener: socket.socket,
    selector: object,
    launchers: dict[int, socket.socket],
    pidfds: dict[int, int],
) -> int:
    """Take one launcher's request and fork its server; 0 when the request was unreadable."""
    data, fds, _flags, _address = socket.recv_fds(conn, MAX_REQUEST, 3)
    if len(fds) != 3 or not data:
        for fd in fds:
            os.close(fd)
        conn.close()
        return 0
    request = json.loads(data)
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        conn.send(json.dumps({"pid": pid}).encode())
        return pid
    # the child: none of the zygote's descriptors, the launcher's streams, folder and environment
    try:
        selector.close()  # type: ignore[attr-defined]
        listener.close()
        conn.close()
        for other in launchers.values():
            other.close()
        for fd in pidfds.values():
            os.close(fd)
        _die_with_parent()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        code = _run(request)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    os._exit(code)


def _die_with_parent() -> None:
    """SIGKILL this child if the zygote ends (Linux ``PR_SET_PDEATHSIG``)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _run(request: dict[str, object]) -> int:
    """Run the script as ``python SCRIPT ARGS`` would, in this process; its exit code."""
    import atexit
    import io
    import runpy
    import threading

    script = str(request["script"])
    os.chdir(str(request["cwd"]))
    os.environ.clear()
    os.environ.update(request["env"])  # type: ignore[arg-type]
    sys.argv = [script, *request["argv"]]  # type: ignore[misc]
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    encoding = os.environ.get("PYTHONIOENCODING") or "utf-8"
    # the streams as the interpreter makes them at start-up (PYTHONUNBUFFERED: unbuffered output)
    sys.stdin = io.TextIOWrapper(open(0, "rb", closefd=False), encoding=encoding)  # noqa: SIM115
    sys.stdout = io.TextIOWrapper(
        open(1, "wb", buffering=0 if unbuffered else -1, closefd=False),  # noqa: SIM115
        encoding=encoding,
        write_through=unbuffered,
    )
    sys.stderr = io.TextIOWrapper(
        open(2, "wb", buffering=0 if unbuffered else -1, closefd=False),  # noqa: SIM115
        encoding=encoding,
        errors="backslashreplace",
        line_buffering=True,
    )
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as done:
        if done.code is None:
            code = 0
        elif isinstance(done.code, int):
            code = done.code
        else:
            sys.stderr.write(f"{done.code}\n")
            code = 1
    except KeyboardInterrupt:  # as the interpreter ends on one: its traceback, then killed by SIGINT
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # as the interpreter does at exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    return code


if __name__ == "__main__" and sys.argv[1:2] == ["zygote"]:
    zygote(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
