"""A headless Chromium driven through the DevTools protocol over a pipe (--remote-debugging-pipe:
commands on the browser's fd 3, answers on its fd 4, JSON messages ended by a NUL byte), with
nothing but the standard library: open a page, then ask it questions in JavaScript until the
answer says the page is ready. Used by the tests that look at what a person sees."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser() -> str | None:
    return next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


class Page:
    """One page of a fresh headless browser: with Page(url) as page: page.wait_for(js)."""

    def __init__(self, url: str, width: int = 1400, height: int = 1100):
        self.profile = tempfile.mkdtemp(prefix="tracedb-browser-")
        commands_r, self._commands = os.pipe()  # we write, the browser reads on its fd 3
        self._answers, answers_w = os.pipe()  # the browser writes on its fd 4, we read

        def fds() -> None:  # in the child: the two pipe ends at the fds the protocol names
            os.dup2(commands_r, 3)
            os.dup2(answers_w, 4)

        self.proc = subprocess.Popen(
            [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "--remote-debugging-pipe",
             "about:blank"],
            # 3 and 4 kept open past the exec: the pipe ends fds() put there
            pass_fds=(3, 4), preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            # its own temporary files (a folder for its singleton socket, which a killed browser
            # leaves) go in the profile, removed with it
            env={**os.environ, "TMPDIR": self.profile})
        os.close(commands_r)
        os.close(answers_w)
        self._next = 0
        self._buffer = b""
        target = self.call("Target.createTarget", {"url": url})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send a command and wait for its answer (events meanwhile are read and left)."""
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._answers, 1 << 16)
                if not chunk:
                    raise RuntimeError("the browser closed its pipe")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, self.session)
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, deadline_s: float = 120):
        """The value of expression once it is truthy: the page asked again until then (a state, not
        a time, is awaited; the deadline only ends a page that never gets there)."""
        end = time.monotonic() + deadline_s
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() > end:
                return value
            time.sleep(0.25)

    def screenshot(self) -> bytes:
        """The page as drawn now, as PNG bytes."""
        import base64
        return base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"}, self.session)["data"])

    def __enter__(self) -> "Page":
        return self

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait()
        os.close(self._commands)
        os.close(self._answers)
        shutil.rmtree(self.profile, ignore_errors=True)
