"""HTTP sessions for talking to the warehouse's web services (Superset's REST API).

A keep-alive connection the server closes while the client is about to reuse it ends in
`RemoteDisconnected` ("Remote end closed connection without response"). Browsers retry such
requests on a new connection without telling anyone; clients of the REST API must do the same,
or a loaded machine turns the race into failed requests. The session here retries a request
whose connection broke before any response arrived (connect and read errors), a few times with a
short backoff. It never retries on an HTTP status (an error answer is the server's answer), nor
after a read timeout (the server got the request and is slow: sending it again adds load).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import ReadTimeoutError
from urllib3.util.retry import Retry


class _DroppedConnectionRetry(Retry):
    """Retry on connection errors and dropped connections, never on a read timeout."""

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: TracebackType | None = None,
    ) -> Retry:
        if isinstance(error, ReadTimeoutError):
            raise error
        return super().increment(method, url, response, error, _pool, _stacktrace)


def retrying_session(attempts: int = 3) -> requests.Session:
    """A `requests.Session` whose requests (every method: the API's POSTs used here only read)
    are sent again, up to `attempts` times, when the connection drops before a response."""
    retry = _DroppedConnectionRetry(
        total=attempts,
        connect=attempts,
        read=attempts,
        status=0,
        redirect=0,
        other=0,
        allowed_methods=None,
        backoff_factor=0.5,
        raise_on_status=False,
    )
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
