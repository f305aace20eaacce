"""The daemon's asyncio Unix-socket server: handshake, limits, dispatch, replay, lifecycle.

The event loop only moves bytes and bookkeeping; service calls run in a bounded thread pool.
Limits (sizes in bytes, times in seconds — see :class:`Limits`):

* at most 16 connections; the 17th gets a ``busy`` error frame and is closed;
* the hello must arrive within 5 s, else the connection is closed and its slot released;
* frames are at most 16 MiB, checked from the header before the body is read;
* input (partial, queued and active frame bodies) is reserved before the bytes are read or
  parsed: the header reserves at most its first 64 KiB, the rest is reserved once those arrived,
  so a peer that announces a full frame and sends nothing retains almost nothing. At most 32 MiB
  per connection (further reading pauses) and 32 MiB daemon-wide (a frame that cannot get budget
  within 10 s gets ``busy`` and the connection closes);
* a peer that stalls costs only its own connection: whenever a request waits for the daemon-wide
  input or output budget or for an in-flight slot, every peer that has kept a write or a frame
  body waiting for ``stall_s`` (1 s) is dropped, releasing what it held (its call carries on and
  its result is kept for a retry);
* before dispatch a request reserves its output bound (``Service.max_output_bytes``, at most one
  frame plus its header; deliberately not a full frame each, which would admit two calls at a
  time daemon-wide — measured in docs/daemon.md) per connection (one full frame) and daemon-wide
  (two full frames). Once
  the answer is materialized the reservation shrinks to the frame's size, and a frame of at most
  64 KiB moves to the small-response lane; what is left is held until the frame is written — or
  dropped because the peer left. A peer that does not read therefore holds only the bytes of its
  own answer, and pauses only its own connection;
* the small-response lane: 64 KiB per connection, 16 × 64 KiB daemon-wide, so a connection's
  small answer (built-ins such as ``daemon.status``, replays, small results) never waits for
  another connection's output;
* a request's input reservation is released once its call has returned (its parsed body is no
  longer held), not when its answer is written;
* at most 8 service calls run at once, at most 8 requests are pipelined per connection;
* events are written with backpressure: ``emit`` blocks its worker until the socket drains,
  a peer that does not read for 30 s is dropped;
* completed results are kept in a small LRU keyed by request id (256 entries, 16 MiB), and a
  request whose id is still running joins it, so a client retrying after a lost connection gets
  the same answer without re-running a write;
* shutdown drains in-flight calls for at most 10 s, then sets their cancel flags.

Lifecycle: once no connection and no running request hold for the grace period
(``daemonGraceSeconds``), the server stops; any connection resets the countdown. Pending
background work (indexing, embedding) that the service names
(:func:`~cwcore.daemon.service.background_pending`) holds it past the grace until the work is
done: it runs at the lowest CPU priority, ``daemon.stop`` and signals stop it at once, and it
resumes from its durable cursors at the next start.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import signal
import socket
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cwcore import config
from cwcore.config import Settings
from cwcore.daemon import protocol
from cwcore.daemon.budget import Budget, Reservation
from cwcore.daemon.paths import DaemonPaths
from cwcore.daemon.protocol import HEADER_BYTES, MAX_FRAME
from cwcore.daemon.service import (
    Service,
    background_pending,
    bind_request_id,
    unbind_request_id,
)
from cwcore.errors import (
    Busy,
    CwError,
    DaemonError,
    InvalidInput,
    ProtocolError,
    excerpt,
)

log = logging.getLogger("cwcore.daemon")

MiB = 1024 * 1024
FULL_FRAME = MAX_FRAME + HEADER_BYTES
#: Built-in methods the server answers itself.
BUILTINS = ("daemon.ping", "daemon.status", "daemon.stop")


@dataclass(frozen=True)
class Limits:
    """Every bound of the transport. Sizes in bytes, durations in seconds."""

    max_connections: int = 16
    handshake_timeout_s: float = 5.0
    frame_timeout_s: float = 30.0
    write_timeout_s: float = 30.0
    max_frame: int = MAX_FRAME
    input_per_connection: int = 32 * MiB
    input_total: int = 32 * MiB
    input_wait_s: float = 10.0
    #: Input reserved from a frame's header alone; the rest once those bytes have arrived.
    input_first_chunk: int = 64 * 1024
    #: Under contention, a peer that has kept a write or a frame body waiting this long is
    #: dropped (see :meth:`Server._stall_loop`).
    stall_s: float = 1.0
    output_per_connection: int = FULL_FRAME
    output_total: int = 2 * FULL_FRAME
    #: The small-response lane per connection (daemon-wide: ``max_connections`` times this).
    small_output_per_connection: int = 64 * 1024
    max_in_flight: int = 8
    pipeline_per_connection: int = 8
    replay_entries: int = 256
    replay_bytes: int = 16 * MiB
    drain_timeout_s: float = 10.0
    grace_s: float = 300.0

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        """Defaults, the grace from settings, and ``CW_HANDSHAKE_TIMEOUT_S`` (tests shorten it)."""
        limits = cls(grace_s=float(settings.daemon_grace_seconds))
        raw = os.environ.get("CW_HANDSHAKE_TIMEOUT_S")
        if raw:
            try:
                limits = dataclasses.replace(limits, handshake_timeout_s=float(raw))
            except ValueError:
                raise InvalidInput(f"CW_HANDSHAKE_TIMEOUT_S: not a number: {raw!r}") from None
        return limits


class ReplayCache:
    """Completed request id → (method, encoded final frame); LRU bounded by count and bytes."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.bytes = 0
        self._items: OrderedDict[str, tuple[str, bytes]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, request_id: str) -> tuple[str, bytes] | None:
        item = self._items.get(request_id)
        if item is not None:
            self._items.move_to_end(request_id)
        return item

    def put(self, request_id: str, method: str, frame: bytes) -> None:
        if len(frame) > self.max_bytes:
            return
        old = self._items.pop(request_id, None)
        if old is not None:
            self.bytes -= len(old[1])
        self._items[request_id] = (method, frame)
        self.bytes += len(frame)
        while len(self._items) > self.max_entries or self.bytes > self.max_bytes:
            _, (_, dropped) = self._items.popitem(last=False)
            self.bytes -= len(dropped)


@dataclass
class Running:
    """A request being served; retries with the same id await ``done``."""

    method: str
    cancel: threading.Event
    done: asyncio.Future[bytes]


def _peer_uid(sock: socket.socket | None) -> int | None:
    """The connecting process's uid (Linux ``SO_PEERCRED``); None where unsupported."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if sock is None or opt is None:
        return None
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", raw)
    return int(uid)


class Connection:
    """One client connection: its own budgets, pipeline slots and serialized writes."""

    #: Writes go out in slices so the transport buffer never holds more than about this much.
    WRITE_SLICE = 256 * 1024

    def __init__(
        self,
        server: Server,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        limits = server.limits
        self.server = server
        self.reader = reader
        self.writer = writer
        self.input = Budget(limits.input_per_connection, "per-connection input")
        self.output = Budget(limits.output_per_connection, "per-connection output")
        self.small = Budget(limits.small_output_per_connection, "per-connection small output")
        self.pipeline = asyncio.Semaphore(limits.pipeline_per_connection)
        self.write_lock = asyncio.Lock()
        self.closed = False
        self.tasks: set[asyncio.Task[None]] = set()
        #: Since when a write (drain) or a frame body read has waited on the peer; None: not.
        self.write_wait_since: float | None = None
        self.read_wait_since: float | None = None

    def stalled_for(self, now: float) -> float:
        """How long the peer has kept this connection's pending write or frame body waiting."""
        since = [t for t in (self.write_wait_since, self.read_wait_since) if t is not None]
        return now - min(since) if since else 0.0

    async def send(self, frame: bytes) -> bool:
        """Write one frame and wait for it to drain; False (and the peer dropped) on failure."""
        if self.closed:
            return False
        async with self.write_lock:
            if self.closed:
                return False
            view = memoryview(frame)
            try:
                async with asyncio.timeout(self.server.limits.write_timeout_s):
                    for start in range(0, len(view), self.WRITE_SLICE):
                        self.writer.write(view[start : start + self.WRITE_SLICE])
                        self.write_wait_since = time.monotonic()
                        await self.writer.drain()
                        self.write_wait_since = None
            except (ConnectionError, TimeoutError, OSError) as exc:
                log.info("dropping a peer that does not read: %s", type(exc).__name__)
                self.abort()
                return False
            finally:
                self.write_wait_since = None
        return True

    def abort(self) -> None:
        self.closed = True
        self.writer.transport.abort()

    def close(self) -> None:
        """Close after flushing what is buffered (the transport sends it before closing)."""
        self.closed = True
        with contextlib.suppress(Exception):
            self.writer.close()

    def release_input(self, n: int) -> None:
        self.input.release(n)
        self.server.input.release(n)


class Server:
    """Serves one :class:`Service` on an already bound, listening socket until stopped."""

    def __init__(
        self,
        service: Service,
        paths: DaemonPaths,
        limits: Limits,
        factory: str,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.service = service
        #: The fingerprint of the settings this daemon runs with (cwcore.config.fingerprint).
        self.settings = settings or {}
        self.paths = paths
        self.limits = limits
        self.factory = factory
        self.pid = os.getpid()
        self.started_wall = time.time()
        self.started = time.monotonic()
        self.connections = 0
        self.in_flight = 0
        self.input = Budget(limits.input_total, "daemon-wide input")
        self.output = Budget(limits.output_total, "daemon-wide output")
        self.small_output = Budget(
            limits.max_connections * limits.small_output_per_connection, "daemon-wide small output"
        )
        self.replay = ReplayCache(limits.replay_entries, limits.replay_bytes)
        self.running: dict[str, Running] = {}
        self.stopping = False
        self.stop_reason = ""
        #: The background work holding the daemon past its idle grace (None: not held).
        self.background: str | None = None
        #: Coroutines waiting for an in-flight slot (with the budgets' waiters: contention).
        self.slot_waiters = 0
        #: Peers dropped because they stalled while others waited.
        self.stalled_dropped = 0
        self._last_active = time.monotonic()
        self._pool = concurrent.futures.ThreadPoolExecutor(
            limits.max_in_flight, thread_name_prefix="cw-call"
        )
        self._conns: set[Connection] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots: asyncio.Semaphore | None = None
        self._quiet: asyncio.Event | None = None
        self._stopped: asyncio.Event | None = None
        self._listener: asyncio.AbstractServer | None = None
        self._socket_inode: tuple[int, int] | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    async def serve(self, sock: socket.socket, on_listening: Callable[[], None]) -> None:
        """Accept on ``sock`` until stopped (``daemon.stop``, idle grace, SIGTERM/SIGINT)."""
        self._loop = asyncio.get_running_loop()
        self._slots = asyncio.Semaphore(self.limits.max_in_flight)
        self._quiet = asyncio.Event()
        self._quiet.set()
        self._stopped = asyncio.Event()
        st = os.stat(self.paths.socket)
        self._socket_inode = (st.st_dev, st.st_ino)
        self._listener = await asyncio.start_unix_server(self._accept, sock=sock)
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                self._loop.add_signal_handler(
                    signum, self.request_stop, signal.Signals(signum).name
                )
        grace = asyncio.create_task(self._grace_loop())
        stalls = asyncio.create_task(self._stall_loop())
        on_listening()
        log.info("listening on %s (pid %d)", self.paths.socket, self.pid)
        try:
            await self._stopped.wait()
        finally:
            grace.cancel()
            stalls.cancel()
            self._pool.shutdown(wait=False, cancel_futures=True)

    def request_stop(self, reason: str) -> None:
        """Begin shutdown once: stop accepting, drain, close connections. Loop thread only."""
        if self.stopping:
            return
        self.stopping = True
        self.stop_reason = reason
        log.info("stopping: %s", reason)
        asyncio.get_running_loop().create_task(self._shutdown())

    async def _shutdown(self) -> None:
        assert self._quiet is not None and self._stopped is not None
        if self._listener is not None:
            self._listener.close()
        self._unlink_socket()
        await asyncio.sleep(0)  # let responses already scheduled (e.g. to daemon.stop) go out
        try:
            await asyncio.wait_for(self._quiet.wait(), self.limits.drain_timeout_s)
        except TimeoutError:
            log.warning(
                "drain took over %gs; cancelling %d call(s)",
                self.limits.drain_timeout_s,
                len(self.running),
            )
            for running in self.running.values():
                running.cancel.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._quiet.wait(), 2.0)
        for conn in list(self._conns):
            conn.close()
        await asyncio.sleep(0.05)  # give the transports a moment to flush their last frames
        self._stopped.set()

    def _unlink_socket(self) -> None:
        """Remove the socket file if it is still ours (a successor may have bound the path)."""
        try:
            st = os.stat(self.paths.socket)
            if (st.st_dev, st.st_ino) == self._socket_inode:
                os.unlink(self.paths.socket)
        except FileNotFoundError:
            pass

    def _touch(self) -> None:
        self._last_active = time.monotonic()
        if self._quiet is not None:
            if self.in_flight == 0 and not self.running:
                self._quiet.set()
            else:
                self._quiet.clear()

    async def _grace_loop(self) -> None:
        """Stop after ``grace_s`` with no connection and no request, and no background work
        the service names as pending (:func:`~cwcore.daemon.service.background_pending`).

        Background work keeps an unused daemon only while it lasts: an archive imported and left
        alone is embedded to the end (niced: it never competes with requests), then the daemon
        exits; ``daemon.stop`` ends it at any time and the work resumes from its durable cursors
        at the next start. A tick of at most 1 s keeps the error small without a busy loop.
        """
        tick = max(0.05, min(1.0, self.limits.grace_s / 4))
        loop = asyncio.get_running_loop()
        while not self.stopping:
            await asyncio.sleep(tick)
            if self.connections or self.in_flight or self.running:
                continue
            if time.monotonic() - self._last_active < self.limits.grace_s:
                continue
            try:
                reason = await loop.run_in_executor(None, background_pending, self.service)
            except Exception:
                log.exception("background_pending() failed")
                reason = None
            if self.stopping:
                return
            if reason is not None:
                if self.background is None:
                    log.info(
                        "idle for %gs; staying for background work: %s", self.limits.grace_s, reason
                    )
                self.background = reason
                continue
            done = " (background work done)" if self.background is not None else ""
            self.background = None
            self.request_stop(f"idle for {self.limits.grace_s:g}s{done}")
            return

    def _contended(self) -> bool:
        """Whether some request waits for a resource shared by every connection."""
        return bool(self.input.waiting or self.output.waiting or self.slot_waiters)

    async def _stall_loop(self) -> None:
        """Drop peers that stall while others wait, so a peer costs only its own connection.

        A peer that does not read (its answer or event cannot drain) or does not send (its frame
        body does not arrive) keeps what it reserved: output bytes, input bytes, and — for a call
        blocked in ``emit`` — an in-flight slot. Whenever a request waits for the daemon-wide
        input or output budget or for a slot, every peer that has kept a write or a frame body
        waiting for ``stall_s`` is dropped: its reservations are released, its call carries on
        and its result is kept for a retry. Without contention such a peer is left alone (up to
        the write and frame timeouts).
        """
        tick = max(0.05, min(0.25, self.limits.stall_s / 4))
        while not self.stopping:
            await asyncio.sleep(tick)
            if not self._contended():
                continue
            now = time.monotonic()
            for conn in list(self._conns):
                if not conn.closed and conn.stalled_for(now) >= self.limits.stall_s:
                    log.info(
                        "dropping a peer stalled for %.1f s while others wait",
                        conn.stalled_for(now),
                    )
                    self.stalled_dropped += 1
                    conn.abort()

    # -- connections ----------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(self, reader, writer)
        refusal: CwError | None = None
        uid = _peer_uid(writer.get_extra_info("socket"))
        if self.stopping:
            refusal = DaemonError("the daemon is stopping; reconnect and retry", retry=True)
        elif uid is not None and uid != os.getuid():
            refusal = DaemonError("connections are accepted from the daemon's own user only")
        elif self.connections >= self.limits.max_connections:
            refusal = Busy(
                f"the daemon already serves {self.limits.max_connections} connections; "
                "retry when one closes"
            )
        if refusal is not None:
            await conn.send(protocol.encode(protocol.error(None, refusal)))
            conn.close()
            return
        self.connections += 1
        self._conns.add(conn)
        self._touch()
        try:
            await self._serve_connection(conn)
        except CwError as err:
            await conn.send(protocol.encode(protocol.error(None, err)))
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass  # peer gone or truncated frame: nothing to answer
        except Exception:
            log.exception("connection handler failed")
        finally:
            self.connections -= 1
            self._conns.discard(conn)
            self._touch()
            conn.close()

    async def _serve_connection(self, conn: Connection) -> None:
        try:
            async with asyncio.timeout(self.limits.handshake_timeout_s):
                hello, size = await self._read_frame(conn, protocol.MAX_HELLO)
        except TimeoutError:
            raise ProtocolError(
                f"handshake not completed within {self.limits.handshake_timeout_s:g} s"
            ) from None
        conn.release_input(size)
        await self._handshake(conn, hello)
        while True:
            await conn.pipeline.acquire()
            try:
                message, size = await self._read_frame(conn, self.limits.max_frame)
            except BaseException as exc:
                conn.pipeline.release()
                if isinstance(exc, asyncio.IncompleteReadError) and conn.tasks:
                    # The peer shut its writing side after its requests (a half-closed
                    # socket, ``nc -N``): it still reads, so its answers go out before the
                    # close. A peer that left altogether holds its slot no longer than a
                    # connected one waiting for the same answers would.
                    await asyncio.wait(set(conn.tasks))
                raise
            kind = message["type"]
            if kind == "request":
                task = asyncio.create_task(self._request(conn, message, size))
                del message  # the task owns the request now (see _request)
                conn.tasks.add(task)
                task.add_done_callback(conn.tasks.discard)
                task.add_done_callback(lambda _t: conn.pipeline.release())
                continue
            conn.release_input(size)
            conn.pipeline.release()
            if kind == "cancel":
                running = self.running.get(str(message.get("id")))
                if running is not None:
                    running.cancel.set()
                continue
            raise ProtocolError(f"unexpected {excerpt(kind)} frame after the handshake")

    async def _handshake(self, conn: Connection, hello: dict[str, Any]) -> None:
        if hello["type"] != "hello":
            raise ProtocolError(f"expected a hello frame, got {excerpt(hello['type'])}")
        version = hello.get("protocol")
        # ``true`` and ``1.0`` equal 1 in Python; the version is the integer, nothing else.
        if type(version) is not int or version != protocol.PROTOCOL_VERSION:
            raise ProtocolError(
                f"unsupported protocol version {excerpt(version)}; "
                f"this daemon speaks version {protocol.PROTOCOL_VERSION}",
                supported=[protocol.PROTOCOL_VERSION],
            )
        required = hello.get("required") or []
        if not isinstance(required, list) or not all(isinstance(c, str) for c in required):
            raise ProtocolError("hello.required must be a list of strings")
        theirs = hello.get("settings")
        if theirs is not None and not (
            isinstance(theirs, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in theirs.items())
        ):
            raise ProtocolError("hello.settings must be an object of strings")
        capabilities = frozenset(self.service.capabilities)
        missing = frozenset(required) - capabilities
        differ = None if theirs is None else config.differing(theirs, self.settings)
        welcome = protocol.welcome(capabilities, self.service.build, self.pid, missing, differ)
        if not await conn.send(protocol.encode(welcome)):
            raise ConnectionResetError("peer left during the handshake")

    async def _reserve_input(self, conn: Connection, n: int) -> None:
        await conn.input.acquire(n)  # waits for this connection's own requests: backpressure
        try:
            await self.input.acquire(n, timeout=self.limits.input_wait_s)
        except BaseException:
            conn.input.release(n)
            raise

    async def _read_body(self, conn: Connection, n: int, into: list[bytes]) -> None:
        """Read ``n`` bytes in slices, recording when the peer keeps a slice waiting."""
        while n:
            step = min(n, Connection.WRITE_SLICE)
            conn.read_wait_since = time.monotonic()
            try:
                into.append(await conn.reader.readexactly(step))
            finally:
                conn.read_wait_since = None
            n -= step

    async def _read_frame(self, conn: Connection, limit: int) -> tuple[dict[str, Any], int]:
        """Read one frame, reserving its body from both input budgets before reading it.

        The header alone reserves at most ``input_first_chunk`` bytes; the rest of the body is
        reserved (at once) when those have arrived. A peer that announces a full frame and sends
        nothing therefore retains almost nothing, while no two partly received frames can wait
        for each other's budget (only a frame that is arriving holds more than its first chunk).
        Returns the message and the reserved size, which the caller must release.
        """
        header = await conn.reader.readexactly(HEADER_BYTES)
        size = protocol.parse_header(header, limit)
        first = min(size, self.limits.input_first_chunk)
        await self._reserve_input(conn, first)
        reserved = first
        try:
            chunks: list[bytes] = []
            try:
                async with asyncio.timeout(self.limits.frame_timeout_s):
                    await self._read_body(conn, first, chunks)
                    if size > first:
                        await self._reserve_input(conn, size - first)
                        reserved = size
                        await self._read_body(conn, size - first, chunks)
            except TimeoutError:
                raise ProtocolError(
                    f"frame body not received within {self.limits.frame_timeout_s:g} s"
                ) from None
            body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            del chunks
            return protocol.decode(body), size
        except BaseException:
            conn.release_input(reserved)
            raise

    # -- requests -------------------------------------------------------------------------------

    async def _request(self, conn: Connection, message: dict[str, Any], size: int) -> None:
        """Serve one request frame.

        Its input reservation (``size``) is released once the body is parsed and handed to its
        call — or at once for a replayed or built-in answer — so a peer that does not read its
        answers holds no input budget. The body travels in a
        one-item list that the call takes it from, so no frame of this chain keeps it alive.
        """
        held = [size]

        def release_input() -> None:
            if held:
                conn.release_input(held.pop())

        rid = message.get("id")
        method = message.get("method")
        body = [message.get("params", {})]
        del message
        try:
            if not protocol.valid_request_id(rid):
                raise ProtocolError(
                    f"request id must be a printable string of 1..{protocol.MAX_REQUEST_ID} chars"
                )
            assert isinstance(rid, str)
            if not isinstance(method, str) or not method:
                raise InvalidInput("request method must be a non-empty string")
            if not isinstance(body[0], dict):
                raise InvalidInput("request params must be an object")
            await self._dispatch(conn, rid, method, body, release_input)
        except CwError as err:
            release_input()
            answer_id = rid if protocol.valid_request_id(rid) else None
            await conn.send(protocol.encode(protocol.error(answer_id, err)))
        except Exception as exc:
            release_input()
            log.exception("request %s failed in the server", excerpt(rid))
            answer_id = rid if protocol.valid_request_id(rid) else None
            failure = CwError(f"internal daemon error: {type(exc).__name__}: {exc}")
            await conn.send(protocol.encode(protocol.error(answer_id, failure)))
        finally:
            release_input()

    async def _dispatch(
        self,
        conn: Connection,
        rid: str,
        method: str,
        body: list[dict[str, Any]],
        release_input: Callable[[], None],
    ) -> None:
        cached = self.replay.get(rid)
        if cached is not None:
            body.clear()
            release_input()
            self._check_same_method(rid, cached[0], method)
            await self._send_reserved(conn, cached[1])
            return
        running = self.running.get(rid)
        if running is not None:
            body.clear()
            release_input()
            self._check_same_method(rid, running.method, method)
            frame = await asyncio.shield(running.done)
            await self._send_reserved(conn, frame)
            return
        if method in BUILTINS:
            body.clear()
            release_input()
            await self._builtin(conn, rid, method)
            return
        if self.stopping:
            raise DaemonError("the daemon is stopping; reconnect and retry", retry=True)
        await self._execute(conn, rid, method, body, release_input)

    @staticmethod
    def _check_same_method(rid: str, known: str, method: str) -> None:
        if known != method:
            raise InvalidInput(f"request id {excerpt(rid)} was already used for {excerpt(known)}")

    def _lane(self, conn: Connection, size: int) -> Reservation:
        """Where an answer of ``size`` bytes is reserved: the small-response lane or the
        full-frame budgets."""
        if size <= self.limits.small_output_per_connection:
            return Reservation(conn.small, self.small_output)
        return Reservation(conn.output, self.output)

    async def _send_reserved(self, conn: Connection, frame: bytes) -> None:
        """Send an already materialized frame under an output reservation of its size."""
        hold = self._lane(conn, len(frame))
        await hold.take(len(frame))
        try:
            await conn.send(frame)
        finally:
            hold.release()

    async def _settle(self, conn: Connection, hold: Reservation, size: int) -> Reservation:
        """Trade a call's pre-dispatch reservation for what its materialized frame needs."""
        hold.shrink(size)
        if size > self.limits.small_output_per_connection:
            return hold
        small = self._lane(conn, size)
        await small.take(size)  # waits only for this connection's own small answers
        hold.release()
        return small

    async def _execute(
        self,
        conn: Connection,
        rid: str,
        method: str,
        body: list[dict[str, Any]],
        release_input: Callable[[], None],
    ) -> None:
        """Reserve output, run the call in the pool, record the outcome, answer the peer."""
        assert self._loop is not None and self._slots is not None
        params = body.pop()
        bound = min(int(self.service.max_output_bytes(method, params)), MAX_FRAME) + HEADER_BYTES
        bound = max(bound, 4096)  # room for an error frame whatever the service declared
        running = Running(method, threading.Event(), self._loop.create_future())
        self.running[rid] = running
        self._touch()
        hold = Reservation(conn.output, self.output)
        try:
            await hold.take(bound)
            try:
                self.slot_waiters += 1
                try:
                    await self._slots.acquire()
                finally:
                    self.slot_waiters -= 1
                try:
                    if self.stopping:
                        raise DaemonError("the daemon is stopping; reconnect and retry", retry=True)
                    self.in_flight += 1
                    try:
                        call = self._loop.run_in_executor(
                            self._pool,
                            self._invoke,
                            conn,
                            rid,
                            method,
                            params,
                            bound,
                            running.cancel,
                        )
                        del params  # the worker holds the body until the call returns
                        # The input budget bounds bytes not yet parsed; this body is parsed and
                        # now belongs to the call (the in-flight limit bounds those). Releasing
                        # it here keeps a call that streams parts to a peer that stopped
                        # reading from holding input that other connections need.
                        release_input()
                        frame, cacheable = await call
                    finally:
                        self.in_flight -= 1
                finally:
                    self._slots.release()
                if cacheable:
                    self.replay.put(rid, method, frame)
                running.done.set_result(frame)
                hold = await self._settle(conn, hold, len(frame))
                await conn.send(frame)  # still under the reservation: covers socket buffering
            finally:
                hold.release()
        except CwError as err:
            if not running.done.done():
                running.done.set_result(protocol.encode(protocol.error(rid, err)))
            raise
        finally:
            if not running.done.done():
                running.done.set_result(
                    protocol.encode(
                        protocol.error(rid, DaemonError("request abandoned", retry=True))
                    )
                )
            self.running.pop(rid, None)
            self._touch()

    def _invoke(
        self,
        conn: Connection,
        rid: str,
        method: str,
        params: dict[str, Any],
        bound: int,
        cancel: threading.Event,
    ) -> tuple[bytes, bool]:
        """Worker thread: call the service; return the final frame and whether to cache it."""
        loop = self._loop
        assert loop is not None
        limit = bound - HEADER_BYTES
        write_wait = self.limits.write_timeout_s + 5.0

        def emit(body: dict[str, Any]) -> None:
            if conn.closed:
                return  # the peer left: events are dropped, the result is kept for a retry
            frame = protocol.encode(protocol.event(rid, body), limit)
            try:
                future = asyncio.run_coroutine_threadsafe(conn.send(frame), loop)
            except RuntimeError:  # the loop is closing: nobody is left to read the event
                return
            try:
                future.result(timeout=write_wait)  # backpressure: wait for the socket to drain
            except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
                future.cancel()  # dropped peer or shutdown: the call itself carries on

        token = bind_request_id(rid)
        try:
            value = self.service.call(method, params, emit, cancel)
            if not isinstance(value, dict):
                raise TypeError(f"service returned {type(value).__name__}, not a dict")
            return protocol.encode(protocol.result(rid, value), limit), True
        except CwError as err:
            # Deterministic answers are replayed; transport-level ones (busy, stopping) are not.
            return protocol.encode(protocol.error(rid, err)), not isinstance(err, DaemonError)
        except Exception as exc:
            log.exception("service call %s (%s) failed", method, rid)
            failure = CwError(f"internal error: {type(exc).__name__}: {exc}")
            return protocol.encode(protocol.error(rid, failure)), False
        finally:
            unbind_request_id(token)

    # -- built-in methods -----------------------------------------------------------------------

    async def _builtin(self, conn: Connection, rid: str, method: str) -> None:
        if method == "daemon.ping":
            body: dict[str, Any] = {"pong": True, "pid": self.pid}
        elif method == "daemon.status":
            body = await self.status()
        else:  # daemon.stop: answer first, then drain and exit
            body = {"stopping": True, "pid": self.pid}
        await self._send_reserved(conn, protocol.encode(protocol.result(rid, body)))
        if method == "daemon.stop":
            self.request_stop("stop requested by a client")

    async def status(self) -> dict[str, Any]:
        """The ``daemon status`` body: transport fields plus ``service`` (Service.status())."""
        loop = asyncio.get_running_loop()
        try:
            extra: dict[str, Any] = await asyncio.wait_for(
                loop.run_in_executor(None, self.service.status), 5.0
            )
        except Exception as exc:  # status must answer even when the service cannot
            extra = {"error": f"{type(exc).__name__}: {exc}"}
        try:
            background = await asyncio.wait_for(
                loop.run_in_executor(None, background_pending, self.service), 5.0
            )
        except Exception:
            background = None
        return {
            "running": True,
            "pid": self.pid,
            "protocol": protocol.PROTOCOL_VERSION,
            "uptime_s": round(time.monotonic() - self.started, 3),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started_wall)),
            "store": str(self.paths.home),
            "socket": str(self.paths.socket),
            "log": str(self.paths.log),
            "build": self.service.build,
            "factory": self.factory,
            "capabilities": sorted(self.service.capabilities),
            "connections": self.connections,
            "max_connections": self.limits.max_connections,
            "in_flight": self.in_flight,
            "running_requests": len(self.running),
            "replay_entries": len(self.replay),
            "input_reserved_bytes": self.input.used,
            "output_reserved_bytes": self.output.used,
            "small_output_reserved_bytes": self.small_output.used,
            "stalled_dropped": self.stalled_dropped,
            "grace_s": self.limits.grace_s,
            "stopping": self.stopping,
            "background": background,
            "service": extra,
        }
