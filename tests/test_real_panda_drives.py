"""The real Panda (example-robot-data) with every effect at once: a 48 V DC motor behind an
elastic transmission on each arm joint (:data:`pinext.drives.HARMONIC_DRIVE_MOTOR`), Coulomb
friction in those joints, the URDF's stops and the ``<mimic>`` coupling of its fingers, from
``pin.neutral`` and from seeded random poses within the limits, under a Python PD law on the
motor angles. The compiled engine must reach every segment of it and agree with the Python
path; both runs obey the laws every run of a real robot obeys (stops held, energy balanced)."""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.drives import HARMONIC_DRIVE_MOTOR, Drive, ElasticTransmission
from tests.models import assert_sound_run, random_pose

BOTH_PATHS = False  # compares both paths itself
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
RATIO = 100.0
#: Coulomb friction of each arm joint [N.m] (the URDF gives none).
FRICTION = 0.8
#: A motor-angle PD law [V/rad], [V.s/rad]: the voltage saturates at the amplifier's 48 V for
#: errors beyond 16 rad of the motor (0.16 rad of the joint).
KP, KD = 3.0, 0.02


def _system(robot):
    drive = Drive(HARMONIC_DRIVE_MOTOR, ElasticTransmission(RATIO, 2e4, 10.0))
    return px.System(
        robot, drives=dict.fromkeys(JOINTS, drive), joint_friction=dict.fromkeys(JOINTS, FRICTION)
    )


def _start(robot, seed):
    """The neutral pose (seed None) or a seeded random one, fingers closed by their mimic."""
    q = pin.neutral(robot.model)
    if seed is not None:
        q = random_pose(robot.model, np.random.default_rng(seed))
    return q


@pytest.mark.parametrize("seed", [None, 3, 11, 23])
def test_real_panda_with_drives_friction_stops_and_mimic_from_any_start(seed, panda, monkeypatch):
    """0.4 s to a target 0.3 rad from the start on every joint (clipped into the limits less
    0.05 rad): the amplifiers saturate, joints stick and slip, stops may be met. Every segment
    runs compiled; the compiled run meets the Python run's events at their times and its
    states to 1e-7 relative (the tolerance of the paths' agreement on driven arms,
    test_compiled_path.py); each run holds the stops and balances its energy."""
    robot, model = panda, panda.model
    q0 = _start(robot, seed)
    rng = np.random.default_rng(0 if seed is None else seed + 100)
    target = np.clip(
        q0[:7] + 0.3 * rng.choice([-1.0, 1.0], 7),
        model.lowerPositionLimit[:7] + 0.05,
        model.upperPositionLimit[:7] - 0.05,
    )

    def law(t, q, v, sensors):
        return (
            KP * (RATIO * target - sensors["drives.motor_angle"])
            - KD * sensors["drives.motor_velocity"]
        )

    runs = {}
    for which, flag in (("compiled", "0"), ("python", "1")):
        monkeypatch.setenv("PINEXT_NO_COMPILED", flag)
        system = _system(robot)
        x0 = px.close_loops(system, q0)
        x0[system.layout["drives.motor_angle"]] = RATIO * system.split(x0)[0][:7]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # velocity-limit reports
            runs[which] = px.simulate(
                system, 0.4, x0=x0, control=law, output_dt=0.01, progress=False
            )
        assert_sound_run(model, runs[which])
    a, b = runs["compiled"], runs["python"]
    assert a.meta["stats"]["compiled_segments"] == a.meta["stats"]["segments"]
    assert b.meta["stats"]["compiled_segments"] == 0
    assert [e.name for e in a.events] == [e.name for e in b.events]
    for ea, eb in zip(a.events, b.events, strict=True):
        assert abs(ea.t - eb.t) <= 1e-7
    scale = max(1.0, float(np.abs(b.x).max()))
    assert np.abs(a.x - b.x).max() <= 1e-7 * scale
    assert np.abs(b.outputs["drives.voltage"]).max() <= 48.0 + 1e-12
