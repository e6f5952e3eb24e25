"""``graphlint server`` over raw stdio: what JSON-RPC says to answer to a message it
cannot take, and input that must not stop the server or make it allocate what a
header claims.

Each test writes bytes to the server and then a request it must answer; responses
come in the order the messages were read, so the answer to the bad message, if there
is one, is in :meth:`Client.responses` before that request's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphlint.server import MAX_MESSAGE
from tests.lsp_client import Client, Message


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Client]:
    client = Client(tmp_path)
    client.initialize(tmp_path)
    yield client
    client.dispose()


def _framed(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _request(number: int, method: str, params: Any) -> bytes:
    message = {"jsonrpc": "2.0", "id": number, "method": method, "params": params}
    return _framed(json.dumps(message).encode())


def _errors(client: Client) -> list[tuple[object, int]]:
    """The (id, code) of every error response so far."""
    return [(m["id"], m["error"]["code"]) for m in client.responses() if "error" in m]


def _logged(messages: list[Message]) -> list[str]:
    return [
        m["params"]["message"]
        for m in messages
        if m.get("method") == "window/logMessage"
    ]


@pytest.mark.parametrize(
    "body",
    [b"{not json", b'{"jsonrpc": "2.0", "method": "\xff"}', b"[" * 100_000],
    ids=["not-json", "not-utf-8", "nested-too-deeply"],
)
def test_a_message_that_is_not_json_is_a_parse_error(
    client: Client, body: bytes
) -> None:
    client.write(_framed(body))
    assert client.call("shutdown", None).get("result", "no result") is None
    assert _errors(client) == [(None, -32700)]


@pytest.mark.parametrize(
    "params",
    [
        {"textDocument": 5, "position": {"line": 0, "character": 0}},
        {"textDocument": {"uri": "file:///a.py"}},
        None,
    ],
    ids=["wrong-type", "missing-field", "none"],
)
def test_a_request_with_invalid_params_is_answered(
    client: Client, params: object
) -> None:
    client.write(_request(100, "textDocument/hover", params))
    assert client.call("shutdown", None).get("result", "no result") is None
    assert _errors(client) == [(100, -32602)]


def test_a_message_that_is_no_request_is_an_invalid_request(client: Client) -> None:
    """JSON, but not a JSON-RPC message: the id is unreadable, so it is null."""
    for body in (b"[]", b"7", b"null", b'{"id": 100}'):
        client.write(_framed(body))
    assert client.call("shutdown", None).get("result", "no result") is None
    assert _errors(client) == [(None, -32600)] * 3 + [(100, -32600)]


def test_a_request_after_shutdown_is_an_invalid_request(client: Client) -> None:
    assert client.request("shutdown", None) is None
    position = {"line": 0, "character": 0}
    hover = {"textDocument": {"uri": "file:///a.py"}, "position": position}
    client.write(_request(100, "textDocument/hover", hover))
    client.write(_request(101, "shutdown", None))
    client.notify("textDocument/didOpen", {})  # a notification: no answer
    client.notify("exit", None)
    code, _, stderr = client.finish()
    assert _errors(client) == [(100, -32600), (101, -32600)]
    assert code == 0, stderr


def test_a_message_longer_than_the_limit_is_skipped(client: Client) -> None:
    """Read and dropped a block at a time: the message after it is read as usual."""
    client.write(_framed(b" " * (MAX_MESSAGE + 1)))
    assert client.request("shutdown", None) is None
    (said,) = _logged(client.notifications)
    assert f"skipped a message of {MAX_MESSAGE + 1} bytes" in said


def test_a_length_no_client_sends_stops_nothing(client: Client) -> None:
    """1 TiB claimed and never sent: the server allocates nothing of the sort; at the
    end of its input it says what it skipped and ends as it does at any end."""
    client.write(b"Content-Length: 1099511627776\r\n\r\n{}")
    code, messages, stderr = client.finish()
    assert any(
        "skipped a message of 1099511627776 bytes" in m for m in _logged(messages)
    )
    assert (code, "Traceback" in stderr) == (0, False), stderr


def test_a_length_of_more_digits_than_python_converts_is_ignored(
    client: Client,
) -> None:
    """Python refuses to convert an integer of over 4,300 digits: the header is not
    read as one, and the next message is."""
    client.write(b"Content-Length: " + b"9" * 5_000 + b"\r\n\r\n")
    assert client.request("shutdown", None) is None


def test_a_notification_with_invalid_params_is_logged_not_answered(
    client: Client,
) -> None:
    """JSON-RPC never answers a notification; the log says what was ignored."""
    client.notify("textDocument/didOpen", {"textDocument": 5})
    assert client.call("shutdown", None).get("result", "no result") is None
    assert _errors(client) == []
    (said,) = _logged(client.notifications)
    assert "ignored 'textDocument/didOpen'" in said
