"""Peers that send garbage get one error answer or a closed connection; the daemon stays up and
serves everyone else (issue 32: socket garbage; spec 003: a client losing its socket does not
affect committed work or other clients).

One real daemon subprocess per module, shared by its tests (each test checks that it still
serves and is the same process; between tests every peer left is reaped). Each hostile peer
opens its own connection: random bytes (Hypothesis), a bad or oversized frame header, a body
that is not JSON, JSON of the wrong shape, the handshake skipped or repeated, a half-closed
socket, a connect-and-close, many at once. A good client on another connection is served
throughout, and ``daemon.status`` stays sane. Timeouts here are failure guards, not speed
claims.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cwcore.api import Archive
from cwcore.daemon import protocol
from cwcore.daemon.client import Client, connect
from cwcore.daemon.paths import daemon_paths
from tests.conftest import FIXED_NOW
from tests.helpers import conversation, examples, real_daemon_env, write_jsonl

#: How long a hostile peer waits for the daemon's answer or close (a failure guard).
GUARD_S = 20.0
HELLO = protocol.encode(protocol.hello(frozenset(), frozenset()))


def _frame(body: bytes) -> bytes:
    return protocol.HEADER.pack(len(body)) + body


def _json(value: Any) -> bytes:
    return _frame(json.dumps(value).encode())


def _request(**fields: Any) -> bytes:
    return _json({"type": "request", **fields})


def _open(home: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(GUARD_S)
    sock.connect(str(daemon_paths(home).socket))
    return sock


def _frames(data: bytes) -> list[dict[str, Any]]:
    """The whole frames in ``data`` (what the daemon sent), decoded."""
    out = []
    while len(data) >= protocol.HEADER_BYTES:
        length = protocol.parse_header(data[: protocol.HEADER_BYTES])
        body = data[protocol.HEADER_BYTES : protocol.HEADER_BYTES + length]
        assert len(body) == length, "the daemon sent a truncated frame"
        out.append(protocol.decode(body))
        data = data[protocol.HEADER_BYTES + length :]
    assert data == b"", "the daemon sent a partial header"
    return out


def _exchange(home: Path, payload: bytes, *, hello: bool, half_close: bool = True) -> list[Any]:
    """Send ``payload`` (after a hello when ``hello``) and, with ``half_close``, shut the
    writing side; returns the frames the daemon sent (after the welcome) until it closed or,
    without ``half_close``, until its first answer."""
    with _open(home) as sock:
        if hello:
            sock.sendall(HELLO)
            welcome = protocol.recv(sock)
            assert welcome["type"] == "welcome"
        try:
            sock.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the daemon refused the frame and closed before taking all of it
        if not half_close:
            return [protocol.recv(sock)]
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            try:
                chunk = sock.recv(1 << 20)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
        return _frames(data)


#: Expectations: an error code (exactly one error frame of that code), ANY_ERROR (exactly one
#: error frame), REPLY (exactly one answer, a result or an error) or None (at most one error
#: frame: the daemon may close without a word, e.g. on a truncated frame).
ANY_ERROR, REPLY, RESULT = "*", "reply", "result"


def _one_answer(frames: list[dict[str, Any]], expect: str | None = None) -> None:
    assert len(frames) <= 1, frames
    if expect is not None:
        assert len(frames) == 1, f"expected one answer, the daemon closed without one: {expect}"
    for frame in frames:
        if expect in (REPLY, RESULT) and frame["type"] == "result":
            continue
        assert expect != RESULT, frame
        assert frame["type"] == "error", frame
        assert isinstance(frame["error"]["code"], str) and frame["error"]["message"]
        if expect not in (None, ANY_ERROR, REPLY):
            assert frame["error"]["code"] == expect, frame


class GoodClient:
    """A client on its own connection that keeps calling while the hostile peers run."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.calls = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._connected = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            with connect(self.home, autostart=False) as client:
                self._connected.set()
                while not self._stop.is_set():
                    assert client.call("daemon.ping", timeout=GUARD_S)["pong"] is True
                    found = client.call("search", {"query": "parseConfig"}, timeout=GUARD_S)
                    assert found["results"], found
                    self.calls += 1
        except Exception as exc:
            self.failures.append(f"{type(exc).__name__}: {exc}")
        finally:
            self._connected.set()

    def __enter__(self) -> GoodClient:
        # Connected before the hostile peers start: peers that left but were not yet reaped
        # still count against the daemon's connection limit, and a good client connecting
        # among them was refused `busy` under load (a race of the test, not of the daemon).
        self._thread.start()
        assert self._connected.wait(GUARD_S), "the good client could not connect"
        return self

    def __exit__(self, *exc: object) -> None:
        # Served throughout: one more whole round after the hostile peers are done.
        target = self.calls + 1
        deadline = time.monotonic() + GUARD_S * 3
        while self.calls < target and not self.failures and time.monotonic() < deadline:
            time.sleep(0.05)
        self._stop.set()
        self._thread.join(GUARD_S * 3)
        assert not self._thread.is_alive(), "the good client hangs"
        assert self.failures == []
        assert self.calls >= 1


@pytest.fixture(scope="module")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Client]]:
    """One real daemon per module (per xdist worker) over a small archive, and a connected
    client (the status reader). Starting and stopping a daemon took 3-6 s per test, ten times
    what the tests themselves take; the garbage a test sends is not allowed to change the
    daemon anyway, and :func:`daemon` checks between tests that it did not."""
    home = tmp_path_factory.mktemp("socket-garbage") / "cw-home"
    with pytest.MonkeyPatch.context() as patch:
        # The environment the top-level ``cw_home`` gives each test, held for the module.
        patch.setenv("CW_HOME", str(home))
        patch.setenv("CW_EMBEDDED", "1")
        patch.setenv("CW_NOW", FIXED_NOW)
        for name in ("CW_PROJECT", "CW_SESSION", "CW_SEMANTIC_RETRIEVAL", "CW_RERANKER_ENABLED"):
            patch.delenv(name, raising=False)
        rows = [r for s in ("s1", "s2") for r in conversation(s, 3)]
        with Archive.open(home, embedded=True) as archive:
            archive.import_paths([write_jsonl(home.parent / "s.jsonl", rows)])
        with real_daemon_env(home, patch), connect(home) as client:
            yield home, client


@pytest.fixture
def cw_home(shared_daemon: tuple[Path, Client]) -> Path:
    """The shared daemon's store (overrides the top-level fixture: every test here talks to
    that daemon, whose environment :func:`shared_daemon` holds for the module)."""
    return shared_daemon[0]


#: How long the daemon may take to reap the peers a test left (a failure guard).
REAP_GUARD_S = 60.0


@pytest.fixture
def daemon(shared_daemon: tuple[Path, Client]) -> Iterator[Client]:
    """The shared daemon's client, after checking the daemon is the one the module started and
    it serves; after the test, the same check, then a wait until every peer the test left is
    reaped (only the status reader connected), so that no test meets another's leftovers as a
    ``busy`` refusal."""
    _, client = shared_daemon
    pid = client.pid
    _sane(client, pid)
    yield client
    _sane(client, pid)
    deadline = time.monotonic() + REAP_GUARD_S
    while (connections := client.call("daemon.status", timeout=GUARD_S)["connections"]) > 1:
        assert time.monotonic() < deadline, f"{connections - 1} peers never reaped"
        time.sleep(0.02)


def _sane(client: Client, pid: int | None) -> None:
    """The daemon that served the test still serves, and its status adds up."""
    status = client.call("daemon.status", timeout=GUARD_S)
    assert status["running"] is True and status["pid"] == pid and not status["stopping"]
    assert 1 <= status["connections"] <= status["max_connections"]
    assert status["input_reserved_bytes"] >= 0 and status["output_reserved_bytes"] >= 0
    assert client.call("sessions", {"limit": 10}, timeout=GUARD_S)["sessions"]


HUGE_ID = "x" * 100_000


def _after_hello(rid: str) -> dict[str, tuple[bytes, str | None]]:
    """name → (payload, expectation; see :func:`_one_answer`), the well-formed request ids
    built from ``rid``. The daemon answers an id it has answered before with that first answer
    (or an error if the method differs), and the tests share a daemon: each test sends ids of
    its own, so that no answer depends on which tests ran before it."""
    raw = rid.encode()
    return {
        "not JSON": (_frame(b"{not json"), "protocol"),
        "not UTF-8": (_frame(b'{"type": "\xff\xfe"}'), "protocol"),
        "empty body": (_frame(b""), "protocol"),
        "a list": (_json([1, 2, 3]), "protocol"),
        "a string": (_json("request"), "protocol"),
        "a number": (_json(12), "protocol"),
        "null": (_json(None), "protocol"),
        "no type": (_json({"id": rid, "method": "daemon.ping"}), "protocol"),
        "type not a string": (_json({"type": 7, "id": rid}), "protocol"),
        "unknown type": (_json({"type": "gossip", "id": rid}), "protocol"),
        "missing method": (_request(id=rid, params={}), "invalid-input"),
        "method not a string": (_request(id=rid, method=["search"], params={}), "invalid-input"),
        "method empty": (_request(id=rid, method="", params={}), "invalid-input"),
        "unknown method": (_request(id=rid, method="no.such.method", params={}), ANY_ERROR),
        "params a list": (_request(id=rid, method="search", params=[1]), "invalid-input"),
        "params a string": (_request(id=rid, method="search", params="q"), "invalid-input"),
        "params null": (_request(id=rid, method="search", params=None), "invalid-input"),
        "missing id": (_request(method="daemon.ping", params={}), "protocol"),
        "huge id": (_request(id=HUGE_ID, method="daemon.ping", params={}), "protocol"),
        "id a number": (_request(id=12, method="daemon.ping", params={}), "protocol"),
        "id a float": (_request(id=1e308, method="daemon.ping", params={}), "protocol"),
        "id an object": (_request(id={"a": 1}, method="daemon.ping", params={}), "protocol"),
        "id a list": (_request(id=["r"], method="daemon.ping", params={}), "protocol"),
        "id true": (_request(id=True, method="daemon.ping", params={}), "protocol"),
        "id null": (_request(id=None, method="daemon.ping", params={}), "protocol"),
        "id empty": (_request(id="", method="daemon.ping", params={}), "protocol"),
        "id a control character": (
            _request(id="r\n1", method="daemon.ping", params={}),
            "protocol",
        ),
        "id a lone surrogate": (
            _frame(b'{"type":"request","id":"\\udc00","method":"x"}'),
            "protocol",
        ),
        "method a lone surrogate": (
            _frame(b'{"type":"request","id":"' + raw + b'","method":"\\ud83d","params":{}}'),
            ANY_ERROR,
        ),
        "params with a lone surrogate": (
            _frame(
                b'{"type":"request","id":"'
                + raw
                + b'-lone","method":"search","params":{"query":"\\udc00"}}'
            ),
            RESULT,
        ),
        "deeply nested": (
            _frame(b'{"type":"request","params":' + b"[" * 50_000 + b"]" * 50_000 + b"}"),
            "protocol",
        ),
        "deeply nested params": (
            _frame(
                b'{"type":"request","id":"'
                + raw
                + b'-deep","method":"daemon.ping","params":{"q":'
                + b"[" * 900
                + b"]" * 900
                + b"}}"
            ),
            RESULT,
        ),
        "huge number": (
            _frame(b'{"type":"request","id":"' + raw + b'","n":' + b"9" * 10_000 + b"}"),
            "protocol",
        ),
        "hello again": (HELLO, "protocol"),
        "welcome from a client": (_json({"type": "welcome", "protocol": 1}), "protocol"),
        "cancel of odd id": (_json({"type": "cancel", "id": {"a": [1]}}) + HELLO, "protocol"),
        "over the frame limit": (protocol.HEADER.pack(protocol.MAX_FRAME + 1), "protocol"),
        "the largest header": (b"\xff\xff\xff\xff", "protocol"),
        "a truncated header": (b"\x00\x00", None),
        "a truncated body": (protocol.HEADER.pack(100) + b"{", None),
    }


NO_HELLO: dict[str, tuple[bytes, str | None]] = {
    "a request first": (_request(id="r1", method="daemon.ping", params={}), "protocol"),
    "a list first": (_json([]), "protocol"),
    "hello of another version": (
        _json({"type": "hello", "protocol": 2, "capabilities": [], "required": []}),
        "protocol",
    ),
    "hello with protocol true": (
        _json({"type": "hello", "protocol": True, "capabilities": [], "required": []}),
        "protocol",
    ),
    "hello with protocol 1.0": (
        _json({"type": "hello", "protocol": 1.0, "capabilities": [], "required": []}),
        "protocol",
    ),
    "hello with odd required": (
        _json({"type": "hello", "protocol": 1, "required": {"a": 1}}),
        "protocol",
    ),
    "hello with odd settings": (
        _json({"type": "hello", "protocol": 1, "settings": {"a": [1]}}),
        "protocol",
    ),
    "hello over its limit": (protocol.HEADER.pack(protocol.MAX_HELLO + 1), "protocol"),
    "an HTTP request": (b"GET / HTTP/1.1\r\nHost: cw\r\n\r\n", "protocol"),
    "nothing": (b"", None),
}


def test_each_malformed_frame_gets_one_error_or_a_close(daemon: Client, cw_home: Path) -> None:
    pid = daemon.pid
    with GoodClient(cw_home):
        for name, (payload, code) in _after_hello("malformed").items():
            try:
                _one_answer(_exchange(cw_home, payload, hello=True), code)
            except AssertionError as exc:
                raise AssertionError(f"{name}: {exc}") from None
        for name, (payload, code) in NO_HELLO.items():
            try:
                _one_answer(_exchange(cw_home, payload, hello=False), code)
            except AssertionError as exc:
                raise AssertionError(f"{name}: {exc}") from None
    _sane(daemon, pid)


def test_a_request_error_leaves_the_connection_usable(daemon: Client, cw_home: Path) -> None:
    """A request of a bad shape is that request's error; the connection carries on."""
    with _open(cw_home) as sock:
        sock.sendall(HELLO)
        assert protocol.recv(sock)["type"] == "welcome"
        sock.sendall(_request(id="usable-1", method=["x"], params={}))
        answer = protocol.recv(sock)
        assert answer["type"] == "error" and answer["id"] == "usable-1"
        sock.sendall(_request(id=["r"], method="daemon.ping", params={}))
        answer = protocol.recv(sock)
        assert answer["type"] == "error" and answer["id"] is None
        assert answer["error"]["code"] == "protocol"
        sock.sendall(_request(id="usable-2", method="daemon.ping", params={}))
        answer = protocol.recv(sock)
        assert answer == {"type": "result", "id": "usable-2", "result": answer_pong(daemon)}


def answer_pong(client: Client) -> dict[str, Any]:
    return {"pong": True, "pid": client.pid}


def test_a_half_closed_peer_still_gets_its_answers(daemon: Client, cw_home: Path) -> None:
    """A peer that sends its requests and shuts its writing side (``nc -N``) is answered
    before the daemon closes the connection."""
    payload = _request(id="half-1", method="daemon.ping", params={}) + _request(
        id="half-2", method="sessions", params={"limit": 5}
    )
    frames = _exchange(cw_home, payload, hello=True)
    assert {f["id"]: f["type"] for f in frames} == {"half-1": "result", "half-2": "result"}


def test_peers_that_connect_and_leave_at_once(daemon: Client, cw_home: Path) -> None:
    pid = daemon.pid
    with GoodClient(cw_home):
        for _ in range(40):
            _open(cw_home).close()
        # While the peers that left are not yet reaped, the daemon may refuse a new one `busy`
        # and close it: a closed connection is an answer these peers accept (they never read).
        for _ in range(10):  # gone after the hello, and in the middle of a request frame
            with _open(cw_home) as sock, contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(HELLO + _request(id="leave-1", method="search", params={})[:9])
        for _ in range(5):  # a request in flight whose peer leaves without reading
            with _open(cw_home) as sock, contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(HELLO + _request(id="leave-2", method="search", params={"query": "x"}))
    _sane(daemon, pid)


def test_many_hostile_peers_at_once(daemon: Client, cw_home: Path) -> None:
    pid = daemon.pid
    cases = list(_after_hello("many").items())[:12]
    errors: list[str] = []

    def hostile(name: str, payload: bytes, code: str | None) -> Callable[[], None]:
        def run() -> None:
            try:
                _one_answer(_exchange(cw_home, payload, hello=True), code)
            except Exception as exc:
                # The 17th connection and beyond may be refused as busy: one error frame too.
                errors.append(f"{name}: {type(exc).__name__}: {exc}")

        return run

    with GoodClient(cw_home):
        threads = [threading.Thread(target=hostile(n, p, c)) for n, (p, c) in cases]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(GUARD_S * 3)
        assert not any(t.is_alive() for t in threads)
    assert [e for e in errors if "busy" not in e] == []
    _sane(daemon, pid)


@settings(
    max_examples=examples(200),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(garbage=st.binary(min_size=1, max_size=2048), after_hello=st.booleans())
def test_random_bytes_get_one_error_or_a_close(
    daemon: Client, cw_home: Path, garbage: bytes, after_hello: bool
) -> None:
    _one_answer(_exchange(cw_home, garbage, hello=after_hello))
    assert daemon.call("daemon.ping", timeout=GUARD_S)["pong"] is True


def test_a_lone_surrogate_travels_as_an_escape(daemon: Client) -> None:
    """A string with a lone surrogate has no UTF-8 form: the frame carries it as a JSON escape
    and the peer reads the same string. A search for text cut inside an emoji echoes its query
    in the result, which used to make the answer an internal error (and the client could not
    even send the request)."""
    frame = protocol.encode({"type": "result", "text": "passed \ud83d"})
    assert frame[protocol.HEADER_BYTES :].isascii()
    assert protocol.decode(frame[protocol.HEADER_BYTES :])["text"] == "passed \ud83d"
    found = daemon.call("search", {"query": "parseConfig \ud83d"}, timeout=GUARD_S)
    assert found["results"]
