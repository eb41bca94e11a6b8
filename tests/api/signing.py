"""Schemathesis hook: signs every request to a route that asks for the API
key headers, as docs/server.md describes, over the exact bytes sent.

Loaded through SCHEMATHESIS_HOOKS=signing (check_api.py sets it); the
credentials come from EXCHANGE_API_KEY and EXCHANGE_API_SECRET.
"""

import hashlib
import hmac
import os
import threading
import time

import requests
import schemathesis


def signature(secret: str, timestamp: str, method: str, path_and_query: str, body: bytes) -> str:
    """The request signature: lowercase hex HMAC-SHA256, keyed with the
    secret's UTF-8 bytes, over timestamp, METHOD, path?query and body, one
    newline between each (so no part can be moved into another)."""
    signed = f"{timestamp}\n{method}\n{path_and_query}\n".encode() + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


class _Clock:
    """Unix milliseconds, later on every call: the server accepts each
    signed request once, and two identical ones signed in the same
    millisecond would be one request."""

    def __init__(self):
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            while True:
                now = int(time.time() * 1000)
                candidate = max(now, self._last + 1)
                # Never far ahead of the wall clock: the server refuses a
                # timestamp more than a second ahead of its own.
                if candidate <= now + 200:
                    self._last = candidate
                    return candidate
                time.sleep(0.001)


_CLOCK = _Clock()


class Signed(requests.auth.AuthBase):
    """Applied by requests once the request is final: the signature covers
    the path, query and body exactly as they go on the wire."""

    def __init__(self, key: str, secret: str):
        self.key, self.secret = key, secret

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode()
        timestamp = str(_CLOCK.next())
        request.headers["EX-ACCESS-KEY"] = self.key
        request.headers["EX-ACCESS-TIMESTAMP"] = timestamp
        request.headers["EX-ACCESS-SIGN"] = signature(
            self.secret, timestamp, request.method, request.path_url, body
        )
        return request


def _is_signed(operation) -> bool:
    security = operation.definition.raw.get("security") or []
    return any("apiSign" in requirement for requirement in security)


@schemathesis.hook
def before_call(context, case, kwargs):
    if _is_signed(case.operation):
        kwargs["auth"] = Signed(os.environ["EXCHANGE_API_KEY"], os.environ["EXCHANGE_API_SECRET"])
