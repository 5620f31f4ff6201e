"""Open an HTML file in headless Chromium over the DevTools protocol (--remote-debugging-pipe):
collect console messages, uncaught exceptions and failed loads, check that every image decoded,
and take a full-page screenshot. Test support, no third-party client."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe",
]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@dataclass
class PageResult:
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, failed loads
    images: int = 0
    broken_images: list[str] = field(default_factory=list)
    height: int = 0
    text: str = ""


class _Pipe:
    def __init__(self, proc: subprocess.Popen, write_fd: int, read_fd: int) -> None:
        self.proc, self.w, self.r = proc, write_fd, read_fd
        self.buf = b""
        self.next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            e = self._read(deadline)
            if e.get("method") == method:
                return e
            self.events.append(e)

    def _read(self, deadline: float) -> dict:
        import select

        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)


def open_page(html: Path, screenshot: Path, width: int = 1280) -> PageResult:
    """Load `html` (file://), screenshot the whole page into `screenshot`, report errors."""
    exe = chromium()
    assert exe, "chromium not installed"
    cmd_r, cmd_w = os.pipe()  # we write commands, chromium reads fd 3
    out_r, out_w = os.pipe()  # chromium writes fd 4, we read

    def fds() -> None:
        os.dup2(cmd_r, 3)
        os.dup2(out_w, 4)

    with tempfile.TemporaryDirectory(prefix="tracebase-chromium-") as profile:
        proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile}", "about:blank"], pass_fds=(3, 4),
                                preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(out_w)
        pipe = _Pipe(proc, cmd_w, out_r)
        try:
            return _drive(pipe, html, screenshot, width)
        finally:
            with contextlib.suppress(Exception):  # already gone
                pipe.send("Browser.close", timeout=5)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            os.close(cmd_w)
            os.close(out_r)


def _drive(pipe: _Pipe, html: Path, screenshot: Path, width: int) -> PageResult:
    # the first command waits for chromium's start: on a VM whose page cache was just reclaimed
    # it reads ~200 MB of binary and libraries from disk (no answer within 30 s once in CI)
    target = pipe.send("Target.createTarget", {"url": "about:blank"}, timeout=120)["targetId"]
    session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log"):
        pipe.send(f"{domain}.enable", session=session)
    pipe.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
              session=session)
    pipe.send("Page.navigate", {"url": html.resolve().as_uri()}, session=session)
    pipe.wait_event("Page.loadEventFired")
    probe = pipe.send("Runtime.evaluate", {"returnByValue": True, "expression": """JSON.stringify({
        images: document.images.length,
        broken: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt.slice(0, 80)),
        height: Math.ceil(document.documentElement.scrollHeight),
        text: document.body.innerText})"""}, session=session)
    info = json.loads(probe["result"]["value"])
    pipe.send("Emulation.setDeviceMetricsOverride",
              {"width": width, "height": info["height"], "deviceScaleFactor": 1, "mobile": False}, session=session)
    shot = pipe.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session)
    screenshot.write_bytes(base64.b64decode(shot["data"]))
    result = PageResult(images=info["images"], broken_images=info["broken"], height=info["height"], text=info["text"])
    for e in pipe.events:
        p = e.get("params", {})
        if e.get("method") == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            result.errors.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")
        elif e.get("method") == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            result.errors.append(f"console.{p['type']}: {[a.get('value') for a in p.get('args', [])]}")
        elif e.get("method") == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
            result.errors.append(f"log {p['entry']['level']}: {p['entry']['text']} {p['entry'].get('url', '')}")
    return result
