"""A small real HTTP server that speaks the few GitHub REST endpoints the sticky comment uses.

It listens on 127.0.0.1 (a free port), serves every URL under an optional path prefix
(``/api/v3`` makes it look like GitHub Enterprise), answers with URLs on its own
host:port, paginates with ``per_page``/``page`` and ``Link`` headers as GitHub does, and
records every request so a test can assert what was (not) written.

Endpoints: ``GET /user``, ``GET /repos/{o}/{r}``, ``GET /repos/{o}/{r}/issues/{n}``,
``GET|POST /repos/{o}/{r}/issues/{n}/comments``, ``PATCH /repos/{o}/{r}/issues/comments/{id}``,
``GET /repos/{o}/{r}/pulls/{n}`` (its head and base from ``head``, ``base`` and ``head_repo``)
and ``GET /repos/{o}/{r}/collaborators/{login}/permission`` (from ``permissions``; ``none``
for anyone not in it, as GitHub answers for a user without access).

Like GitHub, it lets a token with write access edit ANY comment of the issue, so only the
client's own author check protects someone else's comment.

``fault`` makes it answer badly, on the routes named in ``fault_routes`` (every route when
empty): ``other-host`` (every URL in the answer on another host), ``malformed-json`` (a 200
whose body is cut inside a JSON value), ``reset`` (the connection reset mid-answer),
``500``, and ``wrong-shape`` (a 200 whose JSON is a list where an object belongs and an
object where a list belongs).
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
#: where ``fault="other-host"`` points every URL of an answer
OTHER_HOST = "http://api.elsewhere.invalid"


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    authorization: str
    body: Any


@dataclass
class Account:
    login: str
    #: an installation token: ``GET /user`` answers 403 as it does for integrations
    installation: bool = False
    #: read-only (a fork PR's token): writes answer 403
    read_only: bool = False


@dataclass
class FakeGitHub:
    owner: str = "octo-org"
    repo: str = "agents"
    number: int = 7
    prefix: str = ""
    tokens: dict[str, Account] = field(default_factory=dict)
    #: answer 403 to every request (a token without any access to the repository)
    forbid_all: bool = False
    comments: list[dict[str, Any]] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    fault: str | None = None
    fault_routes: tuple[str, ...] = ()
    other_host: str = OTHER_HOST
    #: the pull request's head and base: (sha, branch name); its head's repository ("owner/name")
    head: tuple[str, str] = ("0" * 40, "feature")
    base: tuple[str, str] = ("1" * 40, "main")
    head_repo: str | None = None
    pull_state: str = "open"
    #: login -> the permission GET .../collaborators/{login}/permission answers
    permissions: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._next_id = 1000
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> FakeGitHub:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        self._paced = _unpace()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        setattr(*self._paced)
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def origin(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_url(self) -> str:
        return self.origin + self.prefix

    # -- state -----------------------------------------------------------------------------
    def add_comment(self, login: str, body: str) -> int:
        with self._lock:
            self._next_id += 1
            self.comments.append({"id": self._next_id, "login": login, "body": body})
            return self._next_id

    def writes(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.method in WRITE_METHODS]

    def comment(self, comment_id: int) -> dict[str, Any]:
        return next(c for c in self.comments if c["id"] == comment_id)

    # -- JSON shapes -----------------------------------------------------------------------
    def _user(self, login: str) -> dict[str, Any]:
        return {
            "login": login,
            "id": abs(hash(login)) % 10**6,
            "type": "Bot" if login.endswith("[bot]") else "User",
            "url": f"{self.api_url}/users/{login}",
            "html_url": f"{self.origin}/{login}",
        }

    def _repo_json(self) -> dict[str, Any]:
        full = f"{self.owner}/{self.repo}"
        return {
            "id": 4242,
            "name": self.repo,
            "full_name": full,
            "owner": self._user(self.owner),
            "private": False,
            "url": f"{self.api_url}/repos/{full}",
            "html_url": f"{self.origin}/{full}",
        }

    def _issue_json(self) -> dict[str, Any]:
        base = f"{self.api_url}/repos/{self.owner}/{self.repo}"
        return {
            "id": 77,
            "number": self.number,
            "title": "a pull request",
            "state": "open",
            "url": f"{base}/issues/{self.number}",
            "comments_url": f"{base}/issues/{self.number}/comments",
            "html_url": f"{self.origin}/{self.owner}/{self.repo}/pull/{self.number}",
            "pull_request": {"url": f"{base}/pulls/{self.number}"},
            "user": self._user(self.owner),
            "comments": len(self.comments),
        }

    def _comment_json(self, c: dict[str, Any]) -> dict[str, Any]:
        base = f"{self.api_url}/repos/{self.owner}/{self.repo}"
        return {
            "id": c["id"],
            "node_id": f"IC_{c['id']}",
            "body": c["body"],
            "user": self._user(c["login"]),
            "url": f"{base}/issues/comments/{c['id']}",
            "html_url": f"{self.origin}/{self.owner}/{self.repo}/pull/{self.number}#issuecomment-{c['id']}",
            "issue_url": f"{base}/issues/{self.number}",
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z",
        }

    def _pull_json(self) -> dict[str, Any]:
        full = f"{self.owner}/{self.repo}"
        head_repo = self.head_repo or full
        head_json = dict(self._repo_json(), full_name=head_repo, name=head_repo.split("/")[1])
        head_json["owner"] = self._user(head_repo.split("/")[0])
        return {
            **self._issue_json(),
            "state": self.pull_state,
            "head": {
                "sha": self.head[0],
                "ref": self.head[1],
                "label": f"x:{self.head[1]}",
                "repo": head_json,
            },
            "base": {
                "sha": self.base[0],
                "ref": self.base[1],
                "label": f"x:{self.base[1]}",
                "repo": self._repo_json(),
            },
        }


def _handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    repo_path = re.escape(f"/repos/{fake.owner}/{fake.repo}")
    routes = [
        ("GET", re.compile(r"^/user$"), "user"),
        ("GET", re.compile(rf"^{repo_path}$"), "repo"),
        ("GET", re.compile(rf"^{repo_path}/issues/(\d+)$"), "issue"),
        ("GET", re.compile(rf"^{repo_path}/pulls/(\d+)$"), "pull"),
        ("GET", re.compile(rf"^{repo_path}/collaborators/([^/]+)/permission$"), "permission"),
        ("GET", re.compile(rf"^{repo_path}/issues/(\d+)/comments$"), "list"),
        ("POST", re.compile(rf"^{repo_path}/issues/(\d+)/comments$"), "create"),
        ("PATCH", re.compile(r"^" + repo_path + r"/issues/comments/(\d+)$"), "edit"),
    ]
    return type("Handler", (_Handler,), {"fake": fake, "routes": routes})


#: the faults that replace a route's answer
_ROUTE_FAULTS = ("malformed-json", "reset", "500", "wrong-shape")


class _Handler(BaseHTTPRequestHandler):
    """Answers for one FakeGitHub (set on a subclass by :func:`_handler`)."""

    protocol_version = "HTTP/1.1"
    fake: FakeGitHub
    routes: list[tuple[str, re.Pattern[str], str]]

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        text = json.dumps(payload)
        fake = self.fake
        if self._faulty("other-host"):
            text = text.replace(fake.origin, fake.other_host)
            headers = {k: v.replace(fake.origin, fake.other_host) for k, v in (headers or {}).items()}
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:
        split = urlsplit(self.path)
        query = parse_qs(split.query)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        auth = self.headers.get("Authorization", "")
        with self.fake._lock:
            self.fake.requests.append(Recorded(self.command, split.path, query, auth, body))
        path = split.path
        if self.fake.prefix:
            if not path.startswith(self.fake.prefix + "/"):
                return self._send(404, {"message": "Not Found"})
            path = path[len(self.fake.prefix) :]
        token = auth.partition(" ")[2]
        account = self.fake.tokens.get(token)
        if account is None:
            return self._send(401, {"message": "Bad credentials"})
        if self.fake.forbid_all:
            return self._send(403, {"message": "Resource not accessible by integration"})
        for method, pattern, name in self.routes:
            match = pattern.match(path)
            if method == self.command and match:
                return self._route(name, match, query, body, account)
        return self._send(404, {"message": "Not Found"})

    def _faulty(self, fault: str) -> bool:
        route = getattr(self, "route_name", "")
        return self.fake.fault == fault and (not self.fake.fault_routes or route in self.fake.fault_routes)

    def _send_raw(self, status: int, data: bytes, length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data) if length is None else length))
        self.end_headers()
        self.wfile.write(data)

    def _reset(self) -> None:
        """Start a long answer, then reset the connection (RST, not a clean close)."""
        self._send_raw(200, b'{"id": 1, "na', length=4096)
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def _route(
        self, name: str, match: re.Match[str], query: dict[str, list[str]], body: Any, account: Account
    ) -> None:
        self.route_name = name
        if self.fake.fault in _ROUTE_FAULTS and self._faulty(self.fake.fault):
            return self._fault(name)
        fake = self.fake
        if name == "user":
            if account.installation:
                return self._send(403, {"message": "Resource not accessible by integration"})
            return self._send(200, fake._user(account.login))
        if name == "repo":
            return self._send(200, fake._repo_json())
        if name == "permission":
            login = match.group(1)
            level = fake.permissions.get(login, "none")
            return self._send(200, {"permission": level, "role_name": level, "user": fake._user(login)})
        if int(match.group(1)) != fake.number and name in ("issue", "pull", "list", "create"):
            return self._send(404, {"message": "Not Found"})
        if name == "issue":
            return self._send(200, fake._issue_json())
        if name == "pull":
            return self._send(200, fake._pull_json())
        if name == "list":
            return self._list(query)
        return self._write(name, match, body, account)

    def _fault(self, name: str) -> None:
        """Answer badly as one of ``_ROUTE_FAULTS`` says (``other-host`` is :meth:`_send`'s)."""
        fault = self.fake.fault
        if fault == "malformed-json":
            return self._send_raw(200, b'{"id": 1, "url": "')
        if fault == "reset":
            return self._reset()
        if fault == "500":
            return self._send(500, {"message": "Server Error"})
        # wrong-shape
        return self._send(200, {"message": "not a list"} if name == "list" else [["not", "an object"]])

    def _list(self, query: dict[str, list[str]]) -> None:
        """One page of the issue's comments, with GitHub's ``Link`` header."""
        fake = self.fake
        per_page = min(int(query.get("per_page", ["30"])[0]), 100)
        page = int(query.get("page", ["1"])[0])
        with fake._lock:
            items = list(fake.comments)
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        base = f"{fake.api_url}/repos/{fake.owner}/{fake.repo}/issues/{fake.number}/comments"
        links = []
        if page < last:
            links.append(f'<{base}?per_page={per_page}&page={page + 1}>; rel="next"')
            links.append(f'<{base}?per_page={per_page}&page={last}>; rel="last"')
        if page > 1:
            links.append(f'<{base}?per_page={per_page}&page=1>; rel="first"')
            links.append(f'<{base}?per_page={per_page}&page={page - 1}>; rel="prev"')
        headers = {"Link": ", ".join(links)} if links else {}
        return self._send(200, [fake._comment_json(c) for c in chunk], headers)

    def _write(self, name: str, match: re.Match[str], body: Any, account: Account) -> None:
        """Create or edit a comment; like GitHub, write access may edit anyone's comment."""
        fake = self.fake
        if account.read_only:
            return self._send(403, {"message": "Resource not accessible by integration"})
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            return self._send(422, {"message": "Validation Failed"})
        if name == "create":
            new_id = fake.add_comment(account.login, body["body"])
            return self._send(201, fake._comment_json(fake.comment(new_id)))
        try:
            comment = fake.comment(int(match.group(1)))
        except StopIteration:
            return self._send(404, {"message": "Not Found"})
        comment["body"] = body["body"]
        return self._send(200, fake._comment_json(comment))

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle


def _unpace() -> tuple[Any, str, Any]:
    """PyGithub, in this process, without its pacing while the fake serves: it waits 0.25 s before
    each request and 1 s between writes, for GitHub's secondary rate limits, which the fake does not
    have (about 2.5 s of sleep in each accept test). Every request still goes over HTTP as before.
    Returns what restores the pacing."""
    from github.Requester import Requester

    name = "_Requester__deferRequest"
    paced = getattr(Requester, name)
    setattr(Requester, name, lambda self, verb: None)
    return Requester, name, paced
