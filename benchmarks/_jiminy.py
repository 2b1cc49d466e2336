"""Run one scene in Jiminy (Duburcq et al., jiminy_py) and time it: executed by the Jiminy
interpreter as a subprocess of a benchmark (pinext's venv cannot hold jiminy_py).

Input on stdin, a JSON spec (written by ``_jiminy_peer.py``)::

    urdf        the serial chain (one link per Pinocchio joint, rotors as extra leaf links)
    joints      joint names, the order of q0 and v0 (one coordinate each: revolute joints)
    observe     joint names whose positions are returned (samples, final state)
    q0, v0      initial state; duration [s]; sample [s] (log period); gravity [3]
    frames      [{name, body, xyz, quat (x y z w)}]: frames added on bodies (spring anchors)
    couplings   [{frame1, frame2, stiffness [6], damping [6]}]: Jiminy's viscoelastic coupling
                forces (C++, evaluated in every dynamics evaluation)
    motors      [{name, joint, reduction, armature, viscous, command}]: SimpleMotor, constant
                command [N.m, motor side], armature [kg.m^2, motor side, Jiminy applies
                armature * reduction^2 through the rotor inertia of its ABA], viscous
                [N.m.s/rad, joint side, >= 0; Jiminy's friction option takes it negated]
    settings    [{label, solver ("runge_kutta_4" | "runge_kutta_dopri"), dt | rtol, atol,
                count (default true: count the evaluations in an extra run)}]
    repeats     timed runs per setting (median wall reported)

Output on stdout, JSON: ``{"jiminy": version, "results": [{label, samples, final, wall,
steps, rejected, evals}]}`` with ``samples`` the joint positions at t = 0, sample, 2 sample, ...
(logged by Jiminy at its breakpoints), ``final`` = (q, v) at ``duration``, ``wall`` the median
``time.perf_counter()`` around ``engine.simulate`` (the robot, motors, couplings and options are
set up before), ``steps``/``failed`` Jiminy's accepted/rejected integrator steps and ``evals`` the
number of dynamics evaluations, counted in one extra untimed run by an ``internal_dynamics``
callback (the timed runs have no Python callback inside the integration: Jiminy's binding skips
a ``None`` callback in C++). RK4 settings are not counted (4 evaluations per step; a counted
run gave 4 n + 5 for n steps).

The constant commands are set by a ``FunctionalController`` whose ``compute_command`` runs at the
controller update period = ``sample`` (Jiminy calls a controller with period 0 at every dynamics
evaluation; a constant command needs one call). The update period is also where Jiminy logs and
where its integrators stop (a breakpoint every ``sample``); with the final state only, ``sample``
is the duration and there is no breakpoint before the end. Jiminy caps every step at
``dtMax`` <= 0.02 s (its SIMULATION_MAX_TIMESTEP); it is set to 0.02 s for DOPRI5 and to the
step for RK4 (which then takes exactly ``sample / dt`` steps per sample).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import numpy as np


def build(spec: dict, count: list | None = None):
    """The engine with the robot, motors, constant-command controller and couplings."""
    import jiminy_py.core as jiminy
    import pinocchio as pin

    with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as handle:
        handle.write(spec["urdf"])
        path = handle.name
    try:
        robot = jiminy.Robot()
        robot.initialize(path, has_freeflyer=False, mesh_package_dirs=[])
    finally:
        os.unlink(path)
    for frame in spec["frames"]:
        x, y, z, w = frame["quat"]
        placement = pin.SE3(pin.Quaternion(w, x, y, z).matrix(), np.array(frame["xyz"]))
        robot.add_frame(frame["name"], frame["body"], placement)
    commands = np.zeros(len(spec["motors"]))
    for k, item in enumerate(spec["motors"]):
        motor = jiminy.SimpleMotor(item["name"])
        robot.attach_motor(motor)
        motor.initialize(item["joint"])
        options = motor.get_options()
        options.update(
            mechanicalReduction=float(item["reduction"]),
            enableArmature=item["armature"] > 0.0,
            armature=float(item["armature"]),
            enableEffortLimit=False,
            enableVelocityLimit=False,
            enableFriction=item["viscous"] > 0.0,
            frictionViscousPositive=-float(item["viscous"]),
            frictionViscousNegative=-float(item["viscous"]),
        )
        motor.set_options(options)
        commands[k] = item["command"]

    def compute_command(t, q, v, sensor_measurements, command):
        command[:] = commands

    internal_dynamics = None
    if count is not None:

        def internal_dynamics(t, q, v, sensor_measurements, u_custom):
            count[0] += 1

    robot.controller = jiminy.FunctionalController(compute_command, internal_dynamics)

    engine = jiminy.Engine()
    engine.add_robot(robot)
    for coupling in spec["couplings"]:
        engine.register_viscoelastic_coupling_force(
            robot.name,
            coupling["frame1"],
            coupling["frame2"],
            np.array(coupling["stiffness"], dtype=float),
            np.array(coupling["damping"], dtype=float),
        )

    robot_options = robot.get_options()
    robot_options["model"]["joints"]["positionLimitFromUrdf"] = True  # +-1e300 in the URDF
    robot_options["model"]["dynamics"]["enableFlexibility"] = False
    robot_options["controller"]["telemetryEnable"] = False
    robot.set_options(robot_options)

    options = engine.get_options()
    options["world"]["gravity"] = np.r_[spec["gravity"], 0.0, 0.0, 0.0]
    options["contacts"]["stabilizationFreq"] = 0.0
    telemetry = options["telemetry"]
    for key in list(telemetry):
        if key.startswith("enable"):
            telemetry[key] = False
    telemetry["enableConfiguration"] = True
    telemetry["enableVelocity"] = True
    telemetry["logInternalStepperSteps"] = False
    options["stepper"]["controllerUpdatePeriod"] = float(spec["sample"])
    options["stepper"]["sensorsUpdatePeriod"] = 0.0
    options["stepper"]["iterMax"] = 0
    options["stepper"]["timeout"] = 0.0
    engine.set_options(options)
    return engine, robot


def configure(engine, setting: dict) -> None:
    options = engine.get_options()
    stepper = options["stepper"]
    stepper["odeSolver"] = setting["solver"]
    if setting["solver"] == "runge_kutta_dopri":
        stepper["tolRel"] = float(setting["rtol"])
        stepper["tolAbs"] = float(setting["atol"])
        stepper["dtMax"] = 0.02
    else:
        stepper["dtMax"] = float(setting["dt"])
    engine.set_options(options)


def indices(robot, names: list[str]) -> np.ndarray:
    """Jiminy's position (= velocity, revolute joints) index of each named joint."""
    model = robot.pinocchio_model
    return np.array([model.joints[model.getJointId(name)].idx_q for name in names])


def samples(engine, robot) -> tuple[np.ndarray, np.ndarray]:
    """Joint positions logged at every breakpoint (t = 0, sample, ...), one row per time; the
    telemetry logs the state at t- and t+ of a breakpoint, the last of each time is kept."""
    variables = engine.log_data["variables"]
    times = np.asarray(variables["Global.Time"])
    names = robot.log_position_fieldnames
    columns = [np.asarray(variables[f"{robot.name}.{name}" if robot.name else name]) for name in
               names]  # fmt: skip
    q = np.stack(columns, axis=1)
    last = np.r_[np.diff(times) > 0, True]
    return times[last], q[last]


def main() -> None:
    spec = json.load(sys.stdin)
    import jiminy_py

    duration = float(spec["duration"])
    engine, robot = build(spec)
    q0, v0 = np.zeros(robot.nq), np.zeros(robot.nv)
    if robot.nq != len(spec["joints"]) or robot.nv != robot.nq:
        raise ValueError("the spec's joints must be all the model's joints, all revolute")
    order = indices(robot, spec["joints"])
    q0[order] = spec["q0"]
    v0[order] = spec["v0"]
    observe = indices(robot, spec["observe"])
    count = [0]
    counting_engine, _ = build(spec, count)
    results = []
    for setting in spec["settings"]:
        configure(engine, setting)
        configure(counting_engine, setting)
        walls = []
        failed = False
        for _ in range(int(spec["repeats"])):
            start = time.perf_counter()
            try:
                engine.simulate(duration, q0, v0)
            except Exception:  # the integrator gave up (unstable step)
                failed = True
            walls.append(time.perf_counter() - start)
            if engine.is_simulation_running:
                engine.stop()
            if failed:
                break
        state = engine.stepper_state
        steps, rejected = int(state.iter), int(state.iter_failed)
        t_end = float(state.t)
        if failed or abs(t_end - duration) > 1e-9:
            results.append({"label": setting["label"], "failed": True, "wall": float(np.median(
                walls))})  # fmt: skip
            continue
        times, q = samples(engine, robot)
        q = q[:, observe]
        final = np.r_[np.asarray(state.q[0])[observe], np.asarray(state.v[0])[observe]]
        count[0] = 0
        evals = None
        try:
            if setting.get("count", True):
                counting_engine.simulate(duration, q0, v0)
                evals = count[0]
        except Exception:
            evals = None
        if counting_engine.is_simulation_running:
            counting_engine.stop()
        results.append(
            {
                "label": setting["label"],
                "failed": False,
                "times": times.tolist(),
                "samples": q.tolist(),
                "final": final.tolist(),
                "wall": float(np.median(walls)),
                "steps": steps,
                "rejected": rejected,
                "evals": evals,
            }
        )
    json.dump({"jiminy": jiminy_py.__version__, "results": results}, sys.stdout)


if __name__ == "__main__":
    main()
