"""pinext.sweep: studies on a real Dask LocalCluster (2 worker processes started here)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

import pinext as px
from pinext.exceptions import InvalidParameter, MissingDependency
from pinext.sweep import parameters
from tests.conftest import ROOT, URDF

#: Sweeps run in worker processes started once per session: the compiled path only
#: (the two paths are compared in tests/test_compiled_path.py).
BOTH_PATHS = False

pytest.importorskip("distributed")
pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

ARM = URDF / "flexible_arm.urdf"


# -- studies (top level: the workers import this module to unpickle them) -------------------
def slew(sublinks: int, torque: float) -> dict[str, float]:
    """The flexible arm for 50 ms under a constant hub torque, and its first frequency."""
    robot = px.load_urdf(ARM, flexible=[px.FlexibleLink("bar", sublinks, 1e11, 0.01**4 / 12)])
    u = np.zeros(robot.nv)
    u[0] = torque
    traj = px.simulate(robot, 0.05, control=u, rtol=1e-8, atol=1e-10)
    return {
        "hub_angle": traj.q[-1, 0],
        "tip_rate": traj.v[-1, -1],
        "f1": px.natural_frequencies(robot)[1],
    }


def logged(index: int, delay: float, log: str) -> dict[str, float]:
    """Sleeps ``delay``; point 3 raises. Files record where each point started and ended."""
    Path(log, f"start-{index}-{os.getpid()}").touch()
    if index == 3:
        raise ValueError("point 3 is out of range")
    time.sleep(delay)
    Path(log, f"done-{index}-{os.getpid()}").touch()
    return {"square": float(index**2)}


def counted(x: int, log: str) -> dict[str, float]:
    """One file per call."""
    Path(log, f"call-{x}-{uuid.uuid4().hex}").touch()
    time.sleep(0.05)
    return {"double": 2.0 * x}


def not_a_dict(x: float) -> list[float]:
    return [x]


def warned(x: float) -> dict[str, float]:
    """Warns what a run of the point found (twice the same, as a run per joint would)."""
    import warnings

    from pinext.contact import VelocityLimitWarning

    if x > 0:
        for _ in range(2):
            warnings.warn(
                f"joint 'j' exceeds its velocity limit at x = {x:g}",
                VelocityLimitWarning,
                stacklevel=2,
            )
        warnings.warn("a stiff run", RuntimeWarning, stacklevel=2)
    return {"y": 2.0 * x}


def barred(t_final: float) -> dict[str, float]:
    """A run that asks for its progress bar from the start."""
    traj = px.simulate(px.load_robot("planar3r"), t_final, progress=True)
    return {"q": float(traj.q[-1, 0])}


# -- fixtures --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    from distributed import Client

    cluster = px.sweep.local_cluster(2)
    client = Client(cluster, set_as_default=False, timeout="30s")
    try:
        client.wait_for_workers(2, timeout=60)
        yield cluster, client
    finally:
        client.close()
        cluster.close()


@pytest.fixture
def client(cluster):
    cluster, client = cluster
    client.wait_for_workers(2, timeout=60)  # a test may have killed one
    return client


def calls(log: Path) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in log.glob("call-*"))


def wait_idle(client, timeout: float = 30.0) -> None:
    """Until no task runs on the cluster (cancelled tasks finish their current call)."""
    deadline = time.monotonic() + timeout
    while any(client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)


# -- points ----------------------------------------------------------------------------------
def test_grid_is_the_full_product_last_axis_fastest():
    points = px.sweep.grid({"a": [1, 2], "b": [0.5, 1.5, 2.5]})
    assert len(points) == 6
    assert points[0] == {"a": 1, "b": 0.5} and points[1] == {"a": 1, "b": 1.5}
    assert points[-1] == {"a": 2, "b": 2.5}
    with pytest.raises(InvalidParameter, match="empty"):
        px.sweep.grid({"a": []})
    with pytest.raises(InvalidParameter, match="reserved"):
        parameters.as_points({"status": [1]})
    with pytest.raises(InvalidParameter, match="same parameters"):
        parameters.as_points([{"a": 1}, {"b": 2}])


def test_latin_hypercube_fills_every_stratum_once_and_is_seeded():
    n = 50
    bounds = {"speed": (0.1, 1.1), "stiffness": (1e3, 1e6)}
    points = px.sweep.latin_hypercube(bounds, n, seed=7, log=["stiffness"])
    assert points == px.sweep.latin_hypercube(bounds, n, seed=7, log=["stiffness"])
    assert points != px.sweep.latin_hypercube(bounds, n, seed=8, log=["stiffness"])
    speed = np.array([p["speed"] for p in points])
    stiffness = np.log10([p["stiffness"] for p in points])
    for unit in ((speed - 0.1) / 1.0, (stiffness - 3.0) / 3.0):
        strata = np.floor(unit * n).astype(int)
        assert sorted(strata) == list(range(n))
    sample = px.sweep.random(bounds, 200, seed=3)
    values = np.array([[p["speed"], p["stiffness"]] for p in sample])
    assert np.all(values >= [0.1, 1e3]) and np.all(values <= [1.1, 1e6])
    assert sample == px.sweep.random(bounds, 200, seed=3)
    with pytest.raises(InvalidParameter, match="low < high"):
        px.sweep.random({"a": (1.0, 0.0)}, 3, seed=0)
    with pytest.raises(InvalidParameter, match="positive bounds"):
        px.sweep.latin_hypercube({"a": (0.0, 1.0)}, 3, seed=0, log=["a"])


def test_point_keys_depend_on_study_and_values_only():
    key = parameters.point_key("m.study", {"a": 1.0, "b": 2})
    assert key == parameters.point_key("m.study", {"b": 2, "a": 1.0})
    assert key != parameters.point_key("m.study", {"a": 1, "b": 2})
    assert key != parameters.point_key("m.other", {"a": 1.0, "b": 2})
    assert parameters.study_name(slew) == "tests.test_sweep.slew"


# -- the acceptance tests ----------------------------------------------------------------------
def test_results_equal_a_serial_loop_bit_for_bit(client):
    grid = {"sublinks": [2, 5, 10], "torque": [0.5, 2.0]}
    df = px.sweep(slew, grid, client=client, progress=False)
    assert list(df["status"]) == ["ok"] * 6
    assert df["worker"].nunique() == 2  # both worker processes took points
    for row, point in zip(df.to_dict("records"), px.sweep.grid(grid), strict=True):
        assert {k: row[k] for k in point} == point
        expected = slew(**point)
        for name, value in expected.items():
            assert row[name] == value  # the same float, not merely close
    assert np.all(df["wall_time"] > 0)


def test_a_raising_point_and_a_killed_worker_do_not_stop_the_study(client, tmp_path):
    log = tmp_path / "log"
    log.mkdir()
    pids = client.run(os.getpid)  # worker address -> PID
    killed: dict[str, object] = {}

    def kill_a_busy_worker(row):
        if killed:
            return
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            started = {p.name.split("-", 1)[1] for p in log.glob("start-*")}
            finished = {p.name.split("-", 1)[1] for p in log.glob("done-*")}
            busy = [s for s in started - finished if int(s.split("-")[1]) in pids.values()]
            busy = [s for s in busy if s.split("-")[0] != "3"]
            if busy:
                index, pid = (int(v) for v in busy[0].split("-"))
                os.kill(pid, signal.SIGKILL)
                killed.update(
                    index=index, pid=pid, worker=next(a for a, p in pids.items() if p == pid)
                )
                return
            time.sleep(0.01)

    points = [{"index": i, "delay": 0.3, "log": str(log)} for i in range(10)]
    df = px.sweep(
        logged, points, client=client, retries=2, progress=False, on_result=kill_a_busy_worker
    )
    assert killed, "no worker was busy when the first result arrived"
    by_index = df.set_index("index")
    assert by_index.loc[3, "status"] == "error", by_index.loc[3].to_dict()
    assert "ValueError: point 3 is out of range" in by_index.loc[3, "error"]
    assert "test_sweep.py" in by_index.loc[3, "error"]  # where it was raised
    others = by_index.drop(index=3)
    assert list(others["status"]) == ["ok"] * 9
    assert np.array_equal(others["square"], np.array(others.index, dtype=float) ** 2)
    # The point that was running in the killed process ran again on a live worker.
    retried = by_index.loc[killed["index"]]
    assert retried["attempts"] >= 2
    assert retried["worker"] != killed["worker"]
    assert (log / f"done-{killed['index']}-{killed['pid']}").exists() is False


def test_an_interrupted_study_resumes_with_only_the_missing_points(client, tmp_path):
    log, path = tmp_path / "log", tmp_path / "dataset"
    log.mkdir()
    points = [{"x": x, "log": str(log)} for x in range(12)]
    seen = []

    def interrupt_after_four(row):
        seen.append(row["x"])
        if len(seen) == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        px.sweep(
            counted,
            points,
            client=client,
            path=path,
            progress=False,
            on_result=interrupt_after_four,
        )
    wait_idle(client)
    saved = px.sweep.read(path)
    assert sorted(saved["x"]) == sorted(seen)  # every row that arrived was written
    before = calls(log)
    df = px.sweep(counted, points, client=client, path=path, progress=False)
    rerun = [x for x in calls(log)]
    for x in before:
        rerun.remove(x)
    assert sorted(rerun) == sorted(set(range(12)) - set(seen))  # only the missing points
    assert list(df["x"]) == list(range(12))
    assert np.array_equal(df["double"], 2.0 * np.arange(12))
    assert len(px.sweep.read(path)) == 12
    # A third run computes nothing and starts no cluster.
    n_calls = len(calls(log))
    again = px.sweep(counted, points, path=path, progress=False)
    assert len(calls(log)) == n_calls
    assert np.array_equal(again["double"], df["double"])


# -- clusters ----------------------------------------------------------------------------------
def test_clusters_listen_on_loopback_only(cluster):
    psutil = pytest.importorskip("psutil")
    _, client = cluster
    addresses = [client.scheduler.address, *client.scheduler_info()["workers"]]
    assert all(a.startswith("tcp://127.0.0.1:") for a in addresses)
    pids = [os.getpid(), *client.run(os.getpid).values()]
    listening = [
        c.laddr.ip
        for pid in pids
        for c in psutil.Process(pid).net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ]
    assert listening and set(listening) == {"127.0.0.1"}


def test_embedded_cluster_and_scheduler_address(cluster):
    local, _ = cluster
    points = [{"sublinks": 2, "torque": 1.0}]
    embedded = px.sweep(slew, points, workers=1, progress=False)
    remote = px.sweep(slew, points, client=local.scheduler_address, progress=False)
    assert embedded["hub_angle"][0] == remote["hub_angle"][0] == slew(**points[0])["hub_angle"]
    with pytest.raises(InvalidParameter, match="workers="):
        px.sweep(slew, points, client=local.scheduler_address, workers=2)


def test_bad_results_are_recorded_as_errors(client):
    df = px.sweep(not_a_dict, {"x": [1.0]}, client=client, progress=False)
    assert df["status"][0] == "error" and "dict of floats" in df["error"][0]


def test_warnings_of_the_workers_are_collected_per_point_and_said_once(client, caplog):
    """A point's warnings go to its row (each distinct one once), not to the workers'
    terminals, and one line of the pinext logger sums them up at the end."""
    caplog.set_level("WARNING", logger="pinext")
    df = px.sweep(warned, {"x": [0.0, 1.0, 2.0]}, client=client, progress=False)
    assert list(df["status"]) == ["ok"] * 3 and list(df["y"]) == [0.0, 2.0, 4.0]
    assert df["warnings"][0] == ""
    assert df["warnings"][1].split("\n") == [
        "VelocityLimitWarning: joint 'j' exceeds its velocity limit at x = 1",
        "RuntimeWarning: a stiff run",
    ]
    (line,) = [r.getMessage() for r in caplog.records if r.name.startswith("pinext")]
    assert line.startswith("2 of 3 points raised warnings (see the 'warnings' column)")
    assert "velocity limit at x = 2" in line
    assert list(df.columns[-7:]) == [
        "status",
        "error",
        "warnings",
        "attempts",
        "worker",
        "key",
        "study",
    ]


@pytest.mark.parametrize("timeout", [None, 30.0])
def test_a_point_on_a_worker_draws_no_progress_bar(capfd, monkeypatch, timeout):
    """The workers' runs draw no bar beside the sweep's (issue 59: gear_ratio_study.py
    interleaved every worker's simulate bar with the sweep's), even when the study asks for
    one, in the worker's thread and in the thread of a point with a timeout; the same run
    outside a sweep draws its bar."""
    from pinext.sweep.engine import evaluate

    monkeypatch.setenv("PINEXT_NO_COMPILED", "1")
    barred(0.01)
    assert "simulate" in capfd.readouterr().err  # the bar, outside a worker
    outcome = evaluate(barred, {"t_final": 0.01}, timeout)
    assert outcome["status"] == "ok"
    assert "simulate" not in capfd.readouterr().err


def test_the_gear_ratio_study_motion_keeps_within_the_velocity_limits():
    """The reference motion of drive_tracking (gear_ratio_study.py's 9 and 48 points, and the
    demo's elastic drives) at every duration the example runs: its peak speed per joint,
    35/16 |dq| / (0.8 duration), is at most 80 % of the arm's velocityLimit (the tracking
    error adds micro-radians on top). The motion of the demo's scene runs in
    tests/test_demo.py."""
    import runpy

    from pinext.planning import rest_to_rest
    from pinext.sweep.studies import MOTION, drive_tracking, robot_path

    example = runpy.run_path(str(ROOT / "examples" / "gear_ratio_study.py"))
    durations = set(example["QUICK"]["duration"]) | set(example["FULL"]["duration"])
    default = inspect_default(drive_tracking, "duration")
    limit = px.load_urdf(robot_path("six_dof_arm"), extensions=False).model.velocityLimit
    q0, dq = MOTION
    for duration in sorted(durations | {default}):
        t = np.linspace(0.0, duration, 20001)
        speed = np.abs(np.gradient(rest_to_rest(t, q0, dq, 0.8 * duration), t, axis=0))
        peak = speed.max(axis=0)
        assert peak == pytest.approx(35 / 16 * np.abs(dq) / (0.8 * duration), rel=1e-6)
        assert np.all(peak < 0.8 * limit), (duration, peak / limit)


def inspect_default(function, name: str):
    import inspect

    return inspect.signature(function).parameters[name].default


def test_missing_extra_names_it(monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "distributed" else find_spec(name, *a),
    )
    with pytest.raises(MissingDependency, match=r'pip install "pinext\[sweep\]"') as err:
        px.sweep(slew, {"sublinks": [2], "torque": [1.0]})
    assert err.value.packages == ["distributed"]
    code = "import sys, pinext; sys.exit(any(m in sys.modules for m in ('dask', 'pandas')))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    assert subprocess.run([sys.executable, "-c", code], env=env, check=False).returncode == 0


# -- ready studies, plot, command line ------------------------------------------------------------
def test_ready_studies_limiting_cases():
    studies = px.sweep.studies
    thin, thick = studies.modal(5, side=0.01), studies.modal(5, side=0.02)
    for name in ("f1", "f2", "f3"):  # f ∝ sqrt(E I / μ) / L² ∝ side
        assert thick[name] == pytest.approx(2 * thin[name], rel=1e-9)
    assert np.isnan(studies.modal(1, modes=3)["f2"])
    heavy = studies.impact(speed=0.4, mass=1e9, stiffness=0.0, damping=0.0, duration=0.01)
    wall = studies.impact(speed=0.4, mass=np.inf, stiffness=0.0, damping=0.0, duration=0.01)
    assert heavy["impulse"] == pytest.approx(wall["impulse"], rel=1e-6)
    assert heavy["impact_loss"] == pytest.approx(wall["impact_loss"], rel=1e-6)
    layer = studies.impact(speed=0.4, contact_stiffness=5e4, contact_damping=50.0, duration=0.01)
    assert layer["impulse"] == 0.0 and layer["peak_force"] > 0.0
    assert max(heavy["energy_balance"], layer["energy_balance"]) < 1e-7
    with pytest.raises(px.exceptions.NameNotFound, match="six_dof_arm"):
        studies.robot_path("no_such_robot")


def test_stiffer_transmissions_track_closer():
    soft = px.sweep.studies.drive_tracking(ratio=100.0, stiffness=5e3, duration=0.3)
    stiff = px.sweep.studies.drive_tracking(ratio=100.0, stiffness=8e4, duration=0.3)
    assert stiff["peak_tracking_error"] < 0.2 * soft["peak_tracking_error"]
    assert soft["copper_loss"] > 0 and soft["peak_voltage"] < 48.0
    assert max(soft["energy_balance"], stiff["energy_balance"]) < 1e-6


def test_plot_draws_a_heat_map_over_a_grid_and_lines_otherwise():
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd
    from matplotlib.collections import QuadMesh

    points = px.sweep.grid({"ratio": [50.0, 100.0, 200.0], "stiffness": [1e3, 1e4, 1e5, 1e6]})
    df = pd.DataFrame(points)
    df["error"] = df["ratio"] / df["stiffness"]
    df["status"] = "ok"
    ax = px.sweep.plot(df, "ratio", "stiffness", hue="error")
    mesh = [c for c in ax.collections if isinstance(c, QuadMesh)]
    assert len(mesh) == 1 and mesh[0].get_array().size == 12
    assert ax.get_yscale() == "log"
    ax = px.sweep.plot(df, "stiffness", "error", hue="ratio")
    assert len(ax.get_lines()) == 3
    with pytest.raises(InvalidParameter, match="columns: ratio"):
        px.sweep.plot(df, "gear", "error")


def test_cli_sweep_writes_dataset_plot_and_resumes(cluster, tmp_path, capsys):
    from pinext.cli import main
    from pinext.sweep.spec import load_spec

    local, _ = cluster
    spec = tmp_path / "modal.toml"
    spec.write_text(
        'study = "modal"\nrobot = "flexible_arm"\n[fixed]\nmodes = 2\n'
        "[grid]\nsublinks = [2, 4, 8]\nside = [0.01, 0.02]\n"
    )
    out = tmp_path / "out"
    args = ["sweep", str(spec), "--scheduler", local.scheduler_address, "--out", str(out)]
    assert main([*args, "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "6 points" in text and "6 / 0 / 0" in text and "f1" in text
    assert (out / "f1.png").stat().st_size > 0
    assert len(px.sweep.read(out / "results")) == 6
    assert main([*args, "--quiet"]) == 0  # everything done: nothing recomputed
    study, points, response = load_spec(ROOT / "examples" / "impact_study.toml")
    assert study is px.sweep.studies.impact and len(points) == 30 and response == "impulse"
    assert points[0] == {
        "stiffness": 2e4,
        "damping": 100.0,
        "duration": 0.05,
        "robot": "six_dof_arm",
        "speed": 0.1,
        "mass": 0.5,
    }
    bad = tmp_path / "bad.toml"
    bad.write_text('study = "modal"\n[grid]\nsublink = [2]\n')
    assert main(["sweep", str(bad), "--quiet"]) == 2
    assert "its parameters: sublinks" in capsys.readouterr().err
