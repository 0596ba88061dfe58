"""The REST clients' session: a connection dropped before any response is retried (what browsers
do on a stale keep-alive connection), a slow server or an error status is not."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from gridlake.serving.http import retrying_session


class _Server:
    """A loopback HTTP server that follows a script, one entry per accepted connection: "drop"
    closes the connection after reading the request, "slow" waits 3 s before answering, an int
    answers with that status."""

    def __init__(self, script: list) -> None:
        self.script = list(script)
        self.accepted = 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            step = self.script.pop(0) if self.script else 200
            with conn:
                conn.recv(65536)
                if step == "drop":
                    continue
                if step == "slow":
                    time.sleep(3)
                    step = 200
                body = b'{"ok": true}'
                conn.sendall(
                    f"HTTP/1.1 {step} X\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                    + body
                )

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def server() -> Iterator:
    made: list[_Server] = []

    def make(script: list) -> _Server:
        made.append(_Server(script))
        return made[-1]

    yield make
    for s in made:
        s.close()


def test_a_dropped_connection_is_sent_again(server):
    srv = server(["drop", "drop"])
    resp = retrying_session().get(f"http://127.0.0.1:{srv.port}/api", timeout=10)
    assert resp.status_code == 200 and resp.json() == {"ok": True}
    assert srv.accepted == 3
    # POST too: the REST API's chart-data POSTs only read
    srv = server(["drop"])
    resp = retrying_session().post(f"http://127.0.0.1:{srv.port}/api", json={}, timeout=10)
    assert resp.status_code == 200 and srv.accepted == 2


def test_gives_up_after_the_attempts(server):
    srv = server(["drop"] * 10)
    with pytest.raises(requests.exceptions.ConnectionError):
        retrying_session(attempts=2).get(f"http://127.0.0.1:{srv.port}/", timeout=10)
    assert srv.accepted == 3


def test_neither_a_slow_answer_nor_an_error_status_is_sent_again(server):
    srv = server(["slow"])
    with pytest.raises(requests.exceptions.ReadTimeout):
        retrying_session().get(f"http://127.0.0.1:{srv.port}/", timeout=1)
    assert srv.accepted == 1
    srv = server([503])
    resp = retrying_session().get(f"http://127.0.0.1:{srv.port}/", timeout=10)
    assert resp.status_code == 503 and srv.accepted == 1
