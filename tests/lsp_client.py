"""A small LSP client that drives ``graphlint server`` over stdio, as an editor does:
JSON-RPC messages framed with ``Content-Length``, requests answered by id, and the
server's notifications (diagnostics, log messages) kept in arrival order."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

Message = dict[str, Any]


class Client:
    def __init__(
        self,
        cwd: Path,
        command: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.process = subprocess.Popen(
            command or [sys.executable, "-m", "graphlint", "server"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.next_id = 0
        self.inbox: queue.Queue[Message | None] = queue.Queue()
        self.notifications: list[Message] = []
        self.received: list[Message] = []  # every message read, in order
        assert self.process.stdout is not None
        threading.Thread(
            target=self._read, args=(self.process.stdout,), daemon=True
        ).start()

    def _read(self, stream: IO[bytes]) -> None:
        """Queue each message the server writes; None once its output ends. A
        stream the test closed under this thread ends it too (not a server bug)."""
        try:
            self._read_messages(stream)
        except (OSError, ValueError):
            if not stream.closed:
                raise
            self.inbox.put(None)

    def _read_messages(self, stream: IO[bytes]) -> None:
        while True:
            length = None
            while True:
                header = stream.readline()
                if not header:
                    self.inbox.put(None)
                    return
                if header in (b"\r\n", b"\n"):
                    break
                name, _, value = header.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            assert length is not None, "a message without Content-Length"
            self.inbox.put(json.loads(stream.read(length)))

    def send(self, message: Message) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def write(self, data: bytes) -> None:
        """Write ``data`` to the server as it is: a framed message, or anything."""
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any, timeout: float = 60) -> Any:
        found = self.call(method, params, timeout)
        assert "error" not in found, found["error"]
        return found.get("result")

    def call(self, method: str, params: Any, timeout: float = 60) -> Message:
        """The server's response to a request, whether a result or an error."""
        self.next_id += 1
        number = self.next_id
        self.send({"id": number, "method": method, "params": params})
        return self._until(
            lambda m: m.get("id") == number and "method" not in m, timeout
        )

    def responses(self) -> list[Message]:
        """The responses received so far, in order (errors with a null id too)."""
        return [m for m in self.received if "method" not in m]

    def _until(self, wanted: Callable[[Message], bool], timeout: float) -> Message:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"nothing wanted within {timeout} s")
            try:
                message = self.inbox.get(timeout=left)
            except queue.Empty:
                continue
            if message is None:
                raise EOFError(self._stderr())
            self.received.append(message)
            if "method" in message and "id" in message:  # a request to the client
                self.send({"id": message["id"], "result": None})
            elif "method" in message:
                self.notifications.append(message)
            if wanted(message):
                return message

    def diagnostics(
        self, uri: str, version: int | None = None, timeout: float = 60
    ) -> list[Message]:
        """The next diagnostics published for ``uri`` (for ``version``, when given)."""
        found = self._until(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == uri
                and (version is None or m["params"].get("version") == version)
            ),
            timeout,
        )
        diagnostics: list[Message] = found["params"]["diagnostics"]
        return diagnostics

    def initialize(self, root: Path, capabilities: Message | None = None) -> Any:
        result = self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": capabilities or {},
            },
        )
        self.notify("initialized", {})
        return result

    def open(self, path: Path, text: str, version: int = 1) -> str:
        uri = path.resolve().as_uri()
        self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "python",
                    "version": version,
                    "text": text,
                }
            },
        )
        return uri

    def change(self, uri: str, text: str, version: int) -> None:
        self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": text}],
            },
        )

    def close(self) -> int:
        """Shut the server down as an editor does; its exit code."""
        self.request("shutdown", None)
        self.notify("exit", None)
        code = self.process.wait(timeout=30)
        self.dispose()
        return code

    def ended(self, timeout: float) -> bool:
        """Whether the server's output reaches its end within ``timeout`` seconds
        (every process holding it has closed it)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                if self.inbox.get(timeout=left) is None:
                    return True
            except queue.Empty:
                break
        return False

    def finish(self, timeout: float = 60) -> tuple[int, list[Message], str]:
        """End the server's input, as an editor that goes away does, and read what is
        left: its exit code, its messages until its output ends, and its stderr."""
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        deadline = time.monotonic() + timeout
        while (message := self.inbox.get(timeout=_left(deadline))) is not None:
            self.received.append(message)
        code = self.process.wait(timeout=timeout)
        return (
            code,
            self.received,
            self.process.stderr.read().decode("utf-8", "replace"),
        )

    def dispose(self) -> None:
        """Kill the server if it still runs, and close the pipes."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()

    def _stderr(self) -> str:
        assert self.process.stderr is not None
        self.process.kill()
        self.process.wait()
        return self.process.stderr.read().decode("utf-8", "replace")


def _left(deadline: float) -> float:
    """Seconds until ``deadline``, never negative (``Queue.get`` refuses that)."""
    return max(deadline - time.monotonic(), 0.0)
