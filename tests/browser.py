"""Headless Chromium for the browser tests: open an exported page (SwiftShader WebGL), take
screenshots at chosen animation times and record every request the page makes.

Speaks the DevTools protocol over a websocket (tornado, a meshcat dependency). Not part of the
library: only the tests use it.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import queue
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--enable-unsafe-swiftshader",
    "--use-angle=swiftshader",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
)


def find_chromium() -> str | None:
    """Path of a Chromium / Chrome executable, or None."""
    import shutil

    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclasses.dataclass
class BrowserCapture:
    """What :func:`screenshots` saw.

    Attributes:
        images: One RGB array (height, width, 3) per requested time.
        requests: Every URL the page requested while loading (file:, data:, http(s):...).
        console: Console messages and exceptions of the page.
    """

    images: list[np.ndarray]
    requests: list[str]
    console: list[str]

    def network_requests(self) -> list[str]:
        """The requests that would leave the machine (http, https, ws, wss, ftp)."""
        return [
            u
            for u in self.requests
            if u.split(":", 1)[0].lower() in ("http", "https", "ws", "wss", "ftp")
        ]


def screenshots(
    html_path: str | Path,
    times: Sequence[float | None],
    *,
    size: tuple[int, int] = (800, 600),
    options: str = "",
    chromium: str | None = None,
    timeout: float = 60.0,
) -> BrowserCapture:
    """Open an exported page in headless Chromium (SwiftShader WebGL) and take screenshots.

    Speaks the DevTools protocol over a websocket (tornado, a meshcat dependency); records
    every request the page makes.

    Args:
        html_path: The HTML file (opened as ``file://``).
        times: Animation times [s]; the page is loaded once per time with ``#t=<time>``
            (None: the page as it opens).
        size: Viewport (width, height) [px].
        options: Extra URL fragment options, e.g. ``"controls=0&background=ffffff"``.
        chromium: The executable (default: :func:`find_chromium`).
        timeout: Seconds to wait for each page.
    """
    import asyncio
    import io
    import re
    import shutil
    import tempfile

    from PIL import Image
    from tornado.websocket import websocket_connect

    exe = chromium or find_chromium()
    if exe is None:
        raise FileNotFoundError("no chromium executable found (apt-get install chromium)")
    url = Path(html_path).resolve().as_uri()
    profile = tempfile.mkdtemp(prefix="pinext-chromium-")
    proc = subprocess.Popen(
        [
            exe,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            f"--window-size={size[0]},{size[1]}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def drain() -> None:  # read chromium's log to its end: a full pipe would block it
        for raw in proc.stderr:
            lines.put(raw.decode("utf-8", "replace"))
        lines.put("")

    threading.Thread(target=drain, daemon=True).start()
    try:
        ws_url = None
        deadline = time.monotonic() + timeout
        while ws_url is None:
            try:
                line = lines.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                raise TimeoutError("chromium did not open its DevTools port") from None
            if not line:
                proc.wait(timeout)
                raise RuntimeError(f"chromium exited with code {proc.returncode}")
            match = re.search(r"DevTools listening on (ws://\S+)", line)
            if match:
                ws_url = match.group(1)

        async def run() -> BrowserCapture:
            conn = await asyncio.wait_for(
                websocket_connect(ws_url, max_message_size=256 * 1024 * 1024), timeout
            )
            counter = [0]
            pending: dict[int, asyncio.Future] = {}
            requests: list[str] = []
            console: list[str] = []

            async def reader() -> None:
                while True:
                    msg = await conn.read_message()
                    if msg is None:
                        return
                    data = json.loads(msg)
                    if "id" in data and data["id"] in pending:
                        pending.pop(data["id"]).set_result(data)
                    method = data.get("method", "")
                    params = data.get("params", {})
                    if method == "Network.requestWillBeSent":
                        requests.append(params["request"]["url"])
                    elif method == "Runtime.consoleAPICalled":
                        console.append(
                            " ".join(
                                str(a.get("value", a.get("description", "")))
                                for a in params.get("args", [])
                            )
                        )
                    elif method == "Runtime.exceptionThrown":
                        console.append("exception: " + json.dumps(params)[:500])

            task = asyncio.ensure_future(reader())

            async def call(method: str, session: str | None = None, **params: Any) -> dict:
                counter[0] += 1
                message = {"id": counter[0], "method": method, "params": params}
                if session:
                    message["sessionId"] = session
                future = asyncio.get_running_loop().create_future()
                pending[counter[0]] = future
                await conn.write_message(json.dumps(message))
                reply = await asyncio.wait_for(future, timeout)
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

            target = await call("Target.createTarget", url="about:blank")
            session = (
                await call("Target.attachToTarget", targetId=target["targetId"], flatten=True)
            )["sessionId"]
            for domain in ("Network", "Page", "Runtime"):
                await call(f"{domain}.enable", session)
            await call(
                "Emulation.setDeviceMetricsOverride",
                session,
                width=size[0],
                height=size[1],
                deviceScaleFactor=1,
                mobile=False,
            )
            images = []
            for t in times:
                fragment = "&".join(x for x in (f"t={t}" if t is not None else "", options) if x)
                await call("Page.navigate", session, url="about:blank")
                await call("Page.navigate", session, url=url + ("#" + fragment if fragment else ""))
                end = time.monotonic() + timeout
                while True:
                    result = await call(
                        "Runtime.evaluate", session, expression="window.pinextReady === true"
                    )
                    if result.get("result", {}).get("value") is True:
                        break
                    if time.monotonic() > end:
                        raise TimeoutError(f"the page did not get ready: {console[-5:]}")
                    await asyncio.sleep(0.2)
                await asyncio.sleep(0.3)
                shot = await call("Page.captureScreenshot", session, format="png")
                image = Image.open(io.BytesIO(base64.b64decode(shot["data"]))).convert("RGB")
                images.append(np.asarray(image))
            await call("Browser.close")
            task.cancel()
            return BrowserCapture(images, requests, console)

        return asyncio.run(run())
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
