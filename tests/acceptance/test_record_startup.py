"""record's start-up: the server starts first, and the client's first exchange does not wait
for the recording's modules (capture/early.py, stdio.proxy's ``meanwhile``)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from tests.mcp_agent import INITIALIZE, INITIALIZED, SERVER_CMD, TIMEOUT, request
from toolreplay.capture.early import Early
from toolreplay.capture.recording import Recording
from toolreplay.capture.stdio import proxy, start_server


def test_initialize_is_answered_before_the_recording_is_there(tmp_path: Path) -> None:
    """With a real server, the client gets initialize's answer while the recording is not yet
    attached; once it is, the lines kept meanwhile reach it in order (it knows the server's
    version from initialize's answer) and the session's call is recorded as usual."""
    client_to_proxy, proxy_from_client = os.pipe()
    proxy_to_client, client_from_proxy = os.pipe()
    early, answered, warnings = Early(), threading.Event(), []
    opened: list[Recording] = []
    answers: list[bytes] = []

    def load() -> None:
        assert answered.wait(TIMEOUT), "initialize was not answered before the recording was there"
        opened.append(Recording(str(tmp_path / "run.jsonl"), warn=warnings.append))
        early.attach(opened[0])

    def client() -> None:
        with os.fdopen(proxy_from_client, "wb") as writer, os.fdopen(proxy_to_client, "rb") as reader:
            writer.write(INITIALIZE)
            writer.flush()
            answers.append(reader.readline())
            answered.set()
            writer.write(INITIALIZED + request(1, "tools/list"))
            writer.write(request(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}))
            writer.flush()
            answers.extend([reader.readline(), reader.readline()])

    talking = threading.Thread(target=client, daemon=True)
    talking.start()
    try:
        status = proxy(
            start_server(SERVER_CMD),
            early,
            stdin_fd=client_to_proxy,
            stdout_fd=client_from_proxy,
            warn=warnings.append,
            meanwhile=load,
        )
    finally:
        os.close(client_to_proxy)
        os.close(client_from_proxy)
        talking.join(TIMEOUT)
        for recording in opened:
            recording.close()
    assert status == 0
    assert warnings == []
    assert [json.loads(answer)["id"] for answer in answers] == [0, 1, 2]
    assert opened[0].session.version == "1.0.0"
    records = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    assert [(r["tool"], r["args"], r["fingerprint"] is not None) for r in records] == [
        ("echo", {"text": "hi"}, True)
    ]
