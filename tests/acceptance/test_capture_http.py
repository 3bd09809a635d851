"""record and serve over Streamable HTTP on 127.0.0.1, with a real SDK server and client."""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from tests import mcp_agent
from tests.mcp_agent import (
    INITIALIZE,
    INITIALIZED,
    MALFORMED,
    SERVER_CMD,
    TIMEOUT,
    TOOLREPLAY,
    after_ready,
    dump,
    free_port,
    server_env,
    stop,
    wait_for_port,
)
from toolreplay.cli import cli

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"text": "hi"}),
    ("slow", {"seconds": 0.1, "tag": "t"}),
    ("greet", {"name": "Zoë"}),
    ("picture", {}),
    ("counter", {}),
    ("counter", {}),
]


async def _ask(url: str) -> tuple[list[dict[str, Any]], int]:
    from mcp import Client

    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    with anyio.fail_after(TIMEOUT):
        async with Client(url) as client:
            await client.list_tools()
            answers = [dump(await client.call_tool(t, a, progress_callback=on_progress)) for t, a in CALLS]
    return answers, len(progress)


def _json_answer(handler: Any, body: bytes, *headers: tuple[str, str]) -> None:
    """A target's 200 with a JSON body (and ``headers``), from an http.server handler."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    for name, value in headers:
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _start(argv: list[str], port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=server_env())
    wait_for_port(port, process)
    return process


@pytest.mark.slow
def test_record_and_serve_over_streamable_http(runner: CliRunner, tmp_path: Path) -> None:
    """Through the HTTP proxy the client gets the server's answers (progress events included) and
    each call is sealed; probe --target finds the one tool whose answers moved on; served back
    over HTTP, the recording answers the same."""
    out = tmp_path / "run.sealed.jsonl"
    server_port, proxy_port, serve_port = free_port(), free_port(), free_port()
    server = _start([*SERVER_CMD, "http", str(server_port)], server_port)
    try:
        proxy = _start(
            [
                *TOOLREPLAY,
                "record",
                "-o",
                str(out),
                "--seal",
                "--listen",
                f"127.0.0.1:{proxy_port}",
                "--target",
                f"http://127.0.0.1:{server_port}/mcp",
            ],
            proxy_port,
        )
        live, progress = anyio.run(_ask, f"http://127.0.0.1:{proxy_port}/mcp")
        status, err = stop(proxy)
        # the live server's counter has gone on counting: probe sees that, and nothing else
        probe = runner.invoke(cli, ["probe", str(out), "--target", f"http://127.0.0.1:{server_port}/mcp"])
    finally:
        stop(server)
    assert (probe.exit_code, probe.output) == (
        1,
        "calls: 6\n"
        "asked: 5\n"
        "tool 'counter': silent-drift\n"
        "tool 'echo': stable\n"
        "tool 'greet': stable\n"
        "tool 'picture': stable\n"
        "tool 'slow': stable\n"
        "findings: 1\n"
        "index 4: silent-drift: tool 'counter' answered the call recorded at index 4 differently live,"
        ' first at \'/content/0/text\': recorded "1", live "3"\n',
    )
    assert (status, err.decode()) == (0, f"toolreplay: recorded 6 calls to {out}\n")
    assert progress == 1
    records = [json.loads(line) for line in out.read_text(encoding="ascii").splitlines()]
    assert [r["response"] for r in records] == live
    assert [r["structuredContent"] for r in live[4:]] == [{"result": 1}, {"result": 2}]
    verified = runner.invoke(cli, ["verify", str(out)], catch_exceptions=False)
    assert verified.output.startswith("chain: intact\nlinks: 6\n")

    snapshot = _start([*TOOLREPLAY, "serve", str(out), "--listen", f"127.0.0.1:{serve_port}"], serve_port)
    try:
        served, _ = anyio.run(_ask, f"http://127.0.0.1:{serve_port}/mcp")
    finally:
        status, err = stop(snapshot)
    assert served == live
    assert (status, after_ready(err)) == (0, b"")


def test_record_over_http_with_the_target_down_answers_502_and_warns_in_one_line(tmp_path: Path) -> None:
    """A target that refuses the connection gets the client a 502 and the proxy one warning line
    per request on stderr, no traceback; the proxy keeps serving and exits 0 when stopped. Both
    name the target by its origin: the URL's credentials and query (an API key) are in neither."""
    import urllib.error
    import urllib.request

    out = tmp_path / "run.jsonl"
    proxy_port, dead_port = free_port(), free_port()
    target = f"http://127.0.0.1:{dead_port}"
    secret_url = f"http://agent:s3cret@127.0.0.1:{dead_port}/mcp?api_key=TOPSECRET"
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--listen", f"127.0.0.1:{proxy_port}"]
    proxy = _start([*argv, "--target", secret_url], proxy_port)
    try:
        codes, bodies = [], []
        for _ in range(2):
            request = urllib.request.Request(
                f"http://127.0.0.1:{proxy_port}/mcp",
                data=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
                headers={"Content-Type": "application/json"},
            )
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=TIMEOUT)
            codes.append(refused.value.code)
            bodies.append(refused.value.read().decode())
            refused.value.close()
    finally:
        status, err = stop(proxy)
    assert codes == [502, 502]
    assert [body.startswith(f"cannot reach the target {target}: ") for body in bodies] == [True, True]
    assert (
        "s3cret" not in "".join(bodies) + err.decode() and "TOPSECRET" not in "".join(bodies) + err.decode()
    )
    assert status == 0
    warning = (
        f"toolreplay: warning: cannot reach the target {target}: ConnectionRefusedError:"
        f" [Errno {errno.ECONNREFUSED}] Connect call failed ('127.0.0.1', {dead_port})"
    )
    assert err.decode().splitlines() == [warning, warning, f"toolreplay: recorded 0 calls to {out}"]


def test_record_over_http_with_a_target_that_breaks_off_warns_in_one_line(tmp_path: Path) -> None:
    """A target that promises a longer body than it sends gets one warning line on stderr, no
    traceback; the client's answer ends where the target's did."""
    import socket
    import threading
    import urllib.request

    listener = socket.create_server(("127.0.0.1", 0))
    short_port = listener.getsockname()[1]

    def answer_short() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")

    threading.Thread(target=answer_short, daemon=True).start()
    out = tmp_path / "run.jsonl"
    proxy_port = free_port()
    target = f"http://127.0.0.1:{short_port}/mcp"
    origin = f"http://127.0.0.1:{short_port}"  # how messages name the target
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--listen", f"127.0.0.1:{proxy_port}", "--target", target]
    proxy = _start(argv, proxy_port)
    try:
        request = urllib.request.Request(
            f"http://127.0.0.1:{proxy_port}/mcp",
            data=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
            headers={"Content-Type": "application/json"},
        )
        with contextlib.suppress(Exception), urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            answer.read()
    finally:
        status, err = stop(proxy)
        listener.close()
    lines = err.decode().splitlines()
    assert status == 0
    assert lines[0].startswith(
        f"toolreplay: warning: the target {origin} broke off its answer: RemoteProtocolError: "
    )
    assert lines[1:] == [f"toolreplay: recorded 0 calls to {out}"]


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made with cryptography (the sign extra's library)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_the_target_gets_each_clients_headers_and_nothing_of_the_proxys_own(
    tmp_path: Path, scheme: str
) -> None:
    """The target (Python's own HTTP/1.1 server, over TLS too) gets what each client sent, less the
    hop-by-hop headers: no Accept-Encoding (answers stay readable), no Accept or User-Agent the
    client did not send, and no cookie another client's answer set (the proxy keeps no cookie jar)."""
    import http.client
    import http.server
    import ssl
    import threading

    seen: list[dict[str, str]] = []

    class Target(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append({k.lower(): v for k, v in self.headers.items()})
            _json_answer(
                self,
                b'{"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}',
                ("Set-Cookie", f"session={len(seen)}"),
            )

        def log_message(self, *_: Any) -> None:
            pass

    target = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Target)
    env = server_env()
    if scheme == "https":
        cert, key = _self_signed(tmp_path)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        target.socket = context.wrap_socket(target.socket, server_side=True)
        env["SSL_CERT_FILE"] = str(cert)  # the proxy trusts it as it trusts any CA named there
    threading.Thread(target=target.serve_forever, daemon=True).start()
    out, proxy_port = tmp_path / "run.jsonl", free_port()
    url = f"{scheme}://127.0.0.1:{target.server_address[1]}/mcp"
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--listen", f"127.0.0.1:{proxy_port}", "--target", url]
    proxy = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    answers = []
    try:
        wait_for_port(proxy_port, proxy)
        for client in ("a", "b"):  # two clients, one connection each
            conn = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=TIMEOUT)
            body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
            conn.request(
                "POST", "/mcp", body=body, headers={"Content-Type": "application/json", "X-Client": client}
            )
            answer = conn.getresponse()
            answers.append((answer.status, answer.getheader("Set-Cookie"), answer.read()))
            conn.close()
    finally:
        status, err = stop(proxy)
        target.shutdown()
        target.server_close()
    assert (status, err.decode()) == (0, f"toolreplay: recorded 0 calls to {out}\n")
    assert answers == [
        (200, "session=1", b'{"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}'),
        (200, "session=2", b'{"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}'),
    ]
    assert [(h["x-client"], h["host"]) for h in seen] == [("a", url.split("/")[2]), ("b", url.split("/")[2])]
    # http.client sent Host, Accept-Encoding: identity, Content-Length, and the two named
    assert [sorted(headers) for headers in seen] == [
        ["content-length", "content-type", "host", "x-client"]
    ] * 2


@pytest.mark.slow
def test_a_client_that_leaves_a_stream_and_the_proxy_that_stops_with_one_open(tmp_path: Path) -> None:
    """An event stream passes with the target's own headers (no Server or Date of the proxy's);
    when its client leaves, the proxy drops the target's stream too and goes on serving; stopped
    with a stream still open and a call the target never answers, it ends them, says the call
    was not recorded and exits 0 within its 5 s of grace. A call whose client left before its
    answer is named too, with that reason (not as the target's doing). A request that is not HTTP/1.1 gets a
    400 that shows its line as text."""
    import http.client
    import http.server
    import socket
    import threading
    import time

    dropped, dropped_call = threading.Event(), threading.Event()

    class Target(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            event = (
                b'event: message\ndata: {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}\n\n'
            )
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                for _ in range(int(TIMEOUT * 20)):
                    time.sleep(0.05)
                    self.wfile.write(b"e\r\n: keep-alive\n\n\r\n")
                    self.wfile.flush()
            except OSError:
                dropped.set()

        def do_POST(self) -> None:
            asked = self.rfile.read(int(self.headers["Content-Length"]))
            if b'"streamed"' in asked:  # an event stream that never brings the answer: its client leaves
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for _ in range(int(TIMEOUT * 20)):
                        self.wfile.write(b"e\r\n: keep-alive\n\n\r\n")
                        self.wfile.flush()
                        time.sleep(0.05)
                except OSError:
                    dropped_call.set()
                return
            if b'"tools/call"' in asked:  # never answered: the proxy is stopped while it waits
                time.sleep(TIMEOUT)
                return
            _json_answer(self, b'{"jsonrpc": "2.0", "id": 1, "result": {}}')

        def log_message(self, *_: Any) -> None:
            pass

    target = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Target)
    target.daemon_threads = True
    threading.Thread(target=target.serve_forever, daemon=True).start()
    out, proxy_port = tmp_path / "run.jsonl", free_port()
    url = f"http://127.0.0.1:{target.server_address[1]}/mcp"
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--listen", f"127.0.0.1:{proxy_port}", "--target", url]
    proxy = _start(argv, proxy_port)

    def listen() -> tuple[http.client.HTTPConnection, http.client.HTTPResponse, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=TIMEOUT)
        conn.request("GET", "/mcp", headers={"Accept": "text/event-stream"})
        answer = conn.getresponse()
        return conn, answer, answer.readline() + answer.readline() + answer.readline()

    try:
        first, answer, event = listen()
        headers = [name.lower() for name, _ in answer.getheaders()]
        answer.close()
        first.close()
        assert dropped.wait(TIMEOUT)  # the proxy dropped the target's stream when its client left
        post = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=TIMEOUT)
        post.request("POST", "/mcp", body=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}')
        answered = post.getresponse().read()
        post.close()
        leaving = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=TIMEOUT)
        params = {"name": "streamed", "arguments": {}}
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
        leaving.request("POST", "/mcp", body=json.dumps(call).encode())
        assert leaving.getresponse().status == 200
        leaving.close()  # before the answer: the proxy drops the target's stream and says why
        assert dropped_call.wait(TIMEOUT)
        second, _, _ = listen()  # left open while the proxy stops
        waiting = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=TIMEOUT)
        params = {"name": "hang", "arguments": {}}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        waiting.request("POST", "/mcp", body=json.dumps(call).encode())
        garbage = socket.create_connection(("127.0.0.1", proxy_port), timeout=TIMEOUT)
        garbage.sendall(b"GARBAGE \x01LINE\r\n\r\n")
        refused = garbage.recv(4096)
        garbage.close()
        began = time.monotonic()
        status, err = stop(proxy)
        took = time.monotonic() - began
        second.close()
        waiting.close()
    finally:
        if proxy.poll() is None:
            stop(proxy)
        target.shutdown()
        target.server_close()
    assert headers == ["server", "date", "content-type", "transfer-encoding"]
    assert (
        event == b'event: message\ndata: {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}\n\n'
    )
    assert answered == b'{"jsonrpc": "2.0", "id": 1, "result": {}}'
    assert (status, err.decode()) == (
        0,
        "toolreplay: warning: the client left before the target answered tools/call 'streamed' (id 3);"
        " not recorded\n"
        "toolreplay: warning: record stopped before the target answered tools/call 'hang' (id 2);"
        f" not recorded\ntoolreplay: recorded 0 calls to {out}\n",
    )
    assert took < TIMEOUT
    # a client that does not speak HTTP/1.1 is told why, its line shown as text
    assert refused.startswith(b"HTTP/1.1 400 ")
    assert refused.endswith(b"\r\n\r\nnot an HTTP/1.1 request: illegal request line: 'GARBAGE \\x01LINE'")


class _RawSession:
    """An MCP session over Streamable HTTP spoken with http.client on one connection, so a body no
    SDK client would send can be posted, and a connection the proxy drops shows (RemoteDisconnected)."""

    def __init__(self, port: int) -> None:
        import http.client

        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def post(self, body: bytes) -> tuple[int, list[dict[str, Any]]]:
        """POST ``body``: the status and the JSON-RPC messages of the answer (JSON or events)."""
        self.conn.request("POST", "/mcp", body=body, headers=self.headers)
        answer = self.conn.getresponse()
        session = answer.getheader("mcp-session-id")
        if session:
            self.headers["Mcp-Session-Id"] = session
        data = answer.read()
        if answer.getheader("content-type", "").startswith("text/event-stream"):
            lines = [line[5:].strip() for line in data.splitlines() if line.startswith(b"data:")]
            return answer.status, [json.loads(line) for line in lines if line]
        return answer.status, [json.loads(data)] if data.strip() else []


@pytest.mark.slow
def test_client_messages_record_cannot_judge_pass_on_over_http(tmp_path: Path) -> None:
    """Over Streamable HTTP, bodies no MCP peer reads (a method [1] or {}, params that are not an
    object...) reach the target with one warning each, the connection stays open, and the tools/call
    after them is answered and recorded (a method [1] dropped the connection with "please report")."""
    out = tmp_path / "run.jsonl"
    server_port, proxy_port = free_port(), free_port()
    server = _start([*SERVER_CMD, "http", str(server_port)], server_port)
    try:
        argv = [*TOOLREPLAY, "record", "-o", str(out), "--listen", f"127.0.0.1:{proxy_port}"]
        proxy = _start([*argv, "--target", f"http://127.0.0.1:{server_port}/mcp"], proxy_port)
        session = _RawSession(proxy_port)
        session.post(INITIALIZE)
        session.headers["Mcp-Protocol-Version"] = "2025-06-18"
        session.post(INITIALIZED)
        try:
            for line, _ in MALFORMED:
                session.post(line)
            call = mcp_agent.request(20, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
            status, answers = session.post(call)
        finally:
            session.conn.close()
            _, err = stop(proxy)
    finally:
        stop(server)
    assert status == 200
    assert [answer["result"]["content"] for answer in answers if answer.get("id") == 20] == [
        [{"type": "text", "text": "hi"}]
    ]
    records = [json.loads(line) for line in out.read_text(encoding="ascii").splitlines()]
    assert [record["args"] for record in records] == [{"text": "hi"}]
    assert err.decode().splitlines() == [
        *(f"toolreplay: warning: client message {n}: {said}" for n, (_, said) in enumerate(MALFORMED, 3)),
        f"toolreplay: recorded 1 call to {out}",
    ]


@pytest.mark.slow
def test_fingerprint_target_locks_a_streamable_http_server_as_mcp_does_over_stdio(
    runner: CliRunner, tmp_path: Path
) -> None:
    """fingerprint --target URL asks the server over Streamable HTTP and writes the same lock as
    fingerprint --mcp of the same server over stdio (its serverInfo.version pinned); --target with a
    SOURCE is a usage error."""
    over_stdio, over_http = tmp_path / "stdio.lock.json", tmp_path / "http.lock.json"
    result = runner.invoke(cli, ["fingerprint", "-o", str(over_stdio), "--mcp", "--", *SERVER_CMD])
    assert result.exit_code == 0, result.output
    port = free_port()
    server = _start([*SERVER_CMD, "http", str(port)], port)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        result = runner.invoke(cli, ["fingerprint", "-o", str(over_http), "--target", url])
        assert result.exit_code == 0, result.output
    finally:
        stop(server)
    assert over_http.read_text() == over_stdio.read_text()
    mixed = runner.invoke(cli, ["fingerprint", "x.json", "--target", "http://127.0.0.1:1/mcp"])
    assert mixed.exit_code == 2
    assert "--target asks a server by its URL: give no SOURCE and no --mcp" in mixed.output
