"""The live meshcat server: a child process bound to 127.0.0.1, stopped with its parent.

meshcat's own ``meshcat-server`` listens for the browser on every interface; :class:`LiveServer`
runs the same ZeroMQ/websocket bridge with every socket on :data:`HOST`.

The server never outlives the Python process that started it:

* :meth:`LiveServer.close` runs at interpreter exit (``atexit``);
* while a server runs, SIGTERM (and SIGHUP) stop the servers and then exit the process with the
  usual status 128 + signal number, unless the program installed its own handler, which pinext
  leaves alone; the previous handlers come back when the last server closes;
* the server process exits by itself when its parent disappears (even after SIGKILL).
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import threading
from typing import Any

__all__ = ["HOST", "LiveServer"]

#: Host every socket of the live viewer binds to.
HOST = "127.0.0.1"

#: Signals that stop the servers before the process ends (SIGHUP: the terminal closed).
STOP_SIGNALS = tuple(s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s)

_running: list[LiveServer] = []
_previous_handlers: dict[int, Any] = {}
_lock = threading.Lock()


def _stop_and_exit(signum: int, frame: Any) -> None:
    """Signal handler: close every live server, restore the handlers, exit as the signal would."""
    for server in list(_running):
        server.close()
    raise SystemExit(128 + signum)


def _install_handlers() -> None:
    """Install :func:`_stop_and_exit` for :data:`STOP_SIGNALS` where the default action is set."""
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set from the main thread; atexit still applies
    for signum in STOP_SIGNALS:
        if signum in _previous_handlers:
            continue
        current = signal.getsignal(signum)
        if current in (signal.SIG_DFL, None):
            _previous_handlers[signum] = current
            signal.signal(signum, _stop_and_exit)


def _restore_handlers() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for signum, previous in list(_previous_handlers.items()):
        if signal.getsignal(signum) is _stop_and_exit:
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        del _previous_handlers[signum]


class LiveServer:
    """A meshcat server (web + ZeroMQ) bound to 127.0.0.1, in a child process.

    Attributes:
        zmq_url: ``tcp://127.0.0.1:<port>``.
        web_url: ``http://127.0.0.1:<port>/static/``.
        process: The server process.

    Raises:
        RuntimeError: The server process exited before printing its addresses.
    """

    def __init__(self) -> None:
        cmd = [
            sys.executable,
            "-u",
            "-m",
            "pinext.visualization.server",
            "--serve",
            "--parent",
            str(os.getpid()),
        ]
        self.process = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
        )
        with _lock:
            _running.append(self)
            _install_handlers()
        atexit.register(self.close)
        urls: dict[str, str] = {}
        stdout = self.process.stdout
        assert stdout is not None  # Popen(stdout=PIPE)
        try:
            while len(urls) < 2:
                line = stdout.readline().decode("utf-8").strip()
                if not line and self.process.poll() is not None:
                    raise RuntimeError(
                        f"the meshcat server exited with code {self.process.returncode}"
                    )
                if "=" in line:
                    key, value = line.split("=", 1)
                    if key in ("zmq_url", "web_url"):
                        urls[key] = value
        except BaseException:
            self.close()
            raise
        self.zmq_url, self.web_url = urls["zmq_url"], urls["web_url"]

    @property
    def pid(self) -> int:
        """Process id of the server."""
        return self.process.pid

    @property
    def ports(self) -> tuple[int, int]:
        """(web, ZeroMQ) ports the server listens on."""
        web = int(self.web_url.split(":")[2].split("/")[0])
        zmq = int(self.zmq_url.rsplit(":", 1)[1])
        return web, zmq

    def close(self) -> None:
        """Stop the server (idempotent)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        with _lock:
            if self in _running:
                _running.remove(self)
            if not _running:
                _restore_handlers()
        atexit.unregister(self.close)


def _serve(parent: int | None) -> None:  # pragma: no cover - runs in the server process
    """Run meshcat's ZMQ/websocket bridge with every socket on 127.0.0.1.

    Args:
        parent: Process id to watch: the server exits when that process is gone.
    """
    from meshcat.servers import zmqserver
    from tornado.ioloop import IOLoop, PeriodicCallback

    class Bridge(zmqserver.ZMQWebSocketBridge):
        def make_app(self):
            app = super().make_app()
            listen = app.listen
            app.listen = lambda port, **kw: listen(port, address=HOST, **kw)
            return app

    bridge = Bridge(host=HOST)
    print(f"zmq_url={bridge.zmq_url}")
    print(f"web_url={bridge.web_url}")
    sys.stdout.flush()
    if parent is not None:

        def watch() -> None:
            if os.getppid() != parent:  # re-parented: the process that started us is gone
                IOLoop.current().stop()

        PeriodicCallback(watch, 500).start()
    bridge.run()


def main(argv: list[str] | None = None) -> None:  # pragma: no cover - server process
    """``python -m pinext.visualization.server --serve [--parent PID]``."""
    args = sys.argv[1:] if argv is None else argv
    if "--serve" not in args:
        raise SystemExit("usage: python -m pinext.visualization.server --serve [--parent PID]")
    parent = int(args[args.index("--parent") + 1]) if "--parent" in args else None
    _serve(parent)


if __name__ == "__main__":  # pragma: no cover
    main()
