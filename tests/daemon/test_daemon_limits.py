"""Hostile and broken peers: each gets an error frame or a closed connection, others keep going."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest
from daemon_helpers import DaemonEnv, read_error_then_eof

from cwcore.daemon import protocol
from cwcore.daemon.client import Client, connect
from cwcore.errors import Busy, UnsafeSocket


def _connections(env: DaemonEnv) -> int:
    with connect(env.home, autostart=False) as probe:
        return int(probe.call("daemon.status")["connections"]) - 1  # minus the probe itself


def test_seventeenth_connection_is_busy_and_a_freed_slot_is_reused(env: DaemonEnv) -> None:
    clients = [connect(env.home)]
    try:
        clients += [connect(env.home, autostart=False) for _ in range(15)]
        with pytest.raises(Busy, match="16 connections"):
            connect(env.home, autostart=False)
        for client in clients:  # all sixteen are still served
            assert client.call("daemon.ping")["pong"]
        clients.pop().close()
        # The daemon notices the close asynchronously; the loop ends as soon as it has, so the
        # deadline only bounds a broken daemon (generous: a loaded machine is slow, not wrong).
        deadline = time.monotonic() + 60
        while True:
            try:
                clients.append(connect(env.home, autostart=False))
                break
            except Busy:
                assert time.monotonic() < deadline
                time.sleep(0.02)
        assert clients[-1].call("echo", {"n": 16})["echo"] == {"n": 16}
    finally:
        for client in clients:
            client.close()


def test_silent_client_is_closed_after_the_handshake_timeout(
    env: DaemonEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CW_HANDSHAKE_TIMEOUT_S", "0.5")
    connect(env.home).close()  # start the daemon with the short timeout
    silent = env.raw(hello=False)
    started = time.monotonic()
    assert _connections(env) == 1
    error = read_error_then_eof(silent)
    waited = time.monotonic() - started
    assert error["code"] == "protocol" and "handshake" in error["message"]
    # The configured timeout, not the 5 s default, closed it: the message names it, and it was
    # not early. No upper bound on the wait: under load the daemon may be late, never wrong.
    assert "within 0.5 s" in error["message"]
    assert waited > 0.3
    assert _connections(env) == 0  # the slot is released
    silent.close()


def test_handshake_timeout_defaults_to_five_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    from cwcore.config import Settings
    from cwcore.daemon.server import Limits

    monkeypatch.delenv("CW_HANDSHAKE_TIMEOUT_S", raising=False)
    limits = Limits.from_settings(Settings())
    assert limits.handshake_timeout_s == 5.0
    assert limits.max_connections == 16
    assert limits.max_frame == 16 * 1024 * 1024
    assert limits.input_per_connection == limits.input_total == 32 * 1024 * 1024
    assert limits.output_total == 2 * (16 * 1024 * 1024 + 4)
    assert limits.small_output_per_connection == 64 * 1024
    assert limits.grace_s == 300.0


def test_oversized_frame_header_is_refused_before_reading(env: DaemonEnv) -> None:
    with connect(env.home) as bystander:
        sock = env.raw()
        sock.sendall(struct.pack(">I", 16 * 1024 * 1024 + 1))  # no body follows: never read
        error = read_error_then_eof(sock)
        assert error["code"] == "protocol" and "exceeds" in error["message"]
        sock.close()
        assert bystander.call("echo", {"still": "here"})["echo"] == {"still": "here"}


def test_garbage_bytes_get_an_error_frame(env: DaemonEnv) -> None:
    with connect(env.home) as bystander:
        http = env.raw(hello=False)
        http.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_error_then_eof(http)["code"] == "protocol"
        junk = env.raw()
        junk.sendall(struct.pack(">I", 5) + b"\xff\xfe{]x")
        assert "JSON" in read_error_then_eof(junk)["message"]
        not_object = env.raw()
        not_object.sendall(protocol.HEADER.pack(2) + b"[]")
        assert read_error_then_eof(not_object)["code"] == "protocol"
        for sock in (http, junk, not_object):
            sock.close()
        assert bystander.call("daemon.ping")["pong"]


def test_truncated_frame_closes_only_that_connection(env: DaemonEnv) -> None:
    with connect(env.home) as bystander:
        sock = env.raw()
        sock.sendall(struct.pack(">I", 100) + b'{"type": "req')
        sock.shutdown(socket.SHUT_WR)
        assert sock.recv(1) == b""  # closed without an answer
        sock.close()
        assert bystander.call("daemon.ping")["pong"]
        deadline = time.monotonic() + 3
        while _connections(env) != 1:  # only the bystander remains; its input budget returned
            assert time.monotonic() < deadline
            time.sleep(0.02)
        status = bystander.call("daemon.status")
        assert status["input_reserved_bytes"] < 1024


def test_wrong_protocol_version_gets_a_clear_error(env: DaemonEnv) -> None:
    connect(env.home).close()
    sock = env.raw(hello=False)
    protocol.send(sock, {"type": "hello", "protocol": 2, "capabilities": [], "required": []})
    error = read_error_then_eof(sock)
    assert error["code"] == "protocol"
    assert "version 2" in error["message"] and "version 1" in error["message"]
    assert error["details"] == {"supported": [1]}
    sock.close()
    first = env.raw(hello=False)  # a request before any hello is refused the same way
    protocol.send(first, protocol.request("r1", "daemon.ping", {}))
    assert "hello" in read_error_then_eof(first)["message"]
    first.close()


def test_bad_request_fields_answer_without_closing(env: DaemonEnv) -> None:
    connect(env.home).close()
    sock = env.raw()
    protocol.send(sock, {"type": "request", "id": "", "method": "echo", "params": {}})
    reply = protocol.recv(sock)
    assert reply["type"] == "error" and reply["error"]["code"] == "protocol"
    protocol.send(sock, {"type": "request", "id": "r2", "method": "echo", "params": []})
    reply = protocol.recv(sock)
    assert reply["id"] == "r2" and reply["error"]["code"] == "invalid-input"
    protocol.send(sock, protocol.request("r3", "echo", {"fine": True}))
    assert protocol.recv(sock)["result"]["echo"] == {"fine": True}
    sock.close()


def _symlinked_runtime(env: DaemonEnv) -> None:
    target = env.runtime / "elsewhere"
    target.mkdir(mode=0o700)
    (env.runtime / f"cw-{os.getuid()}").symlink_to(target)


def test_symlinked_socket_dir_is_refused_by_the_client(env: DaemonEnv) -> None:
    _symlinked_runtime(env)
    with pytest.raises(UnsafeSocket, match="symlink"):
        Client(env.home)
    assert not (env.home / "opened").exists()


def test_symlinked_socket_dir_is_refused_by_the_daemon(env: DaemonEnv) -> None:
    _symlinked_runtime(env)
    run = subprocess.run(env.daemon_cmd("--foreground"), capture_output=True, text=True, timeout=20)
    assert run.returncode == UnsafeSocket.exit_code
    assert "symlink" in run.stderr
    assert not (env.home / "opened").exists(), "storage was opened despite the unsafe directory"
    detached = subprocess.run(env.daemon_cmd(), capture_output=True, text=True, timeout=20)
    assert detached.returncode == UnsafeSocket.exit_code and "symlink" in detached.stderr


def test_group_accessible_socket_dir_is_refused(env: DaemonEnv) -> None:
    directory = env.runtime / f"cw-{os.getuid()}"
    directory.mkdir(mode=0o700)
    directory.chmod(0o750)
    with pytest.raises(UnsafeSocket, match="0700"):
        connect(env.home)
    assert not (env.home / "opened").exists()


def test_a_refusal_sent_before_the_hello_is_still_the_answer(tmp_path: Path) -> None:
    # Under load the daemon may send its busy frame and close before the client has written
    # its hello: writing then fails (broken pipe), yet the refusal waits in the socket. The
    # client reports it, not a lost connection it would retry and end as "could not connect".
    ours, daemon = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    daemon.sendall(protocol.encode(protocol.error(None, Busy("the daemon already serves 16"))))
    daemon.close()
    client = Client(tmp_path / "home", autostart=False)
    try:
        with pytest.raises(Busy, match="already serves 16"):
            client._handshake(ours)
    finally:
        ours.close()
