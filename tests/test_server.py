"""The live meshcat server stops with ``pinext view``: SIGTERM frees its ports."""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import subprocess
import sys

import numpy as np
import pytest

import pinext as px
from tests.test_viewer import _trajectory


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _alive(process) -> bool:
    """The process runs (a zombie waiting for its parent to reap it does not)."""
    import psutil

    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_sigterm_to_pinext_view_stops_the_server(tmp_path):
    psutil = pytest.importorskip("psutil")
    robot = px.load_urdf(px.robot_path("six_dof_arm"), extensions=False)
    t = np.linspace(0.0, 0.2, 5)
    npz = _trajectory(robot, t, np.zeros((t.size, robot.nq))).save(tmp_path / "still.npz")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pinext", "view", str(npz)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = None
        for line in proc.stdout:
            match = re.search(r"open (http://127\.0\.0\.1:(\d+)/\S*)", line)
            if match:
                url = match.group(1)
                break
        assert url is not None, proc.stderr.read()
        servers = psutil.Process(proc.pid).children()
        assert servers, "no server process"
        ports = {
            c.laddr.port
            for s in servers
            for c in s.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN
        }
        assert len(ports) >= 2 and int(url.split(":")[2].split("/")[0]) in ports
        assert not any(_port_is_free(p) for p in ports)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 128 + signal.SIGTERM
        assert not any(_alive(s) for s in servers)
        assert all(_port_is_free(p) for p in ports)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_server_exits_when_pinext_view_is_killed(tmp_path):
    """SIGKILL leaves no handler a chance: the server notices that its parent is gone."""
    psutil = pytest.importorskip("psutil")
    robot = px.load_urdf(px.robot_path("six_dof_arm"), extensions=False)
    t = np.linspace(0.0, 0.2, 5)
    npz = _trajectory(robot, t, np.zeros((t.size, robot.nq))).save(tmp_path / "still.npz")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pinext", "view", str(npz)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    servers = []
    try:
        for line in proc.stdout:
            if "open http://127.0.0.1:" in line:
                break
        servers = psutil.Process(proc.pid).children()
        assert servers
        ports = {
            c.laddr.port
            for s in servers
            for c in s.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN
        }
        proc.kill()
        proc.wait()
        for server in servers:  # the server polls its parent id every 0.5 s
            with contextlib.suppress(psutil.TimeoutExpired):
                server.wait(60)
        assert not any(_alive(s) for s in servers)
        assert all(_port_is_free(p) for p in ports)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for s in servers:
            if _alive(s):
                s.kill()
