"""The first natural frequency of a design with elastic transmissions
(pinext.planning.natural_frequency): the two-mass closed forms of one joint, the six-DOF arm
against Pinocchio's mass matrix, a flexible link on an elastic hub between Dunkerley's bound
and its two constrained systems, and the optimal design's limit."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from scipy.linalg import eigh

import pinext as px
from pinext.exceptions import InvalidParameter, NameNotFound
from pinext.planning import (
    DriveProblem,
    RestToRest,
    first_natural_frequency,
    load_catalogue,
    load_harmonic_drives,
    optimize,
)
from pinext.planning.natural_frequency import POSES, FrequencyLimit
from tests.models import pick_and_place

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "examples" / "dc_motors.toml"
HARMONIC = ROOT / "examples" / "optimal_drives_harmonic.toml"

ONE_JOINT = """<?xml version="1.0"?>
<robot name="load">
  <link name="base"/>
  <joint name="axis" type="revolute">
    <parent link="base"/><child link="load"/>
    <axis xyz="0 0 1"/>
    <limit lower="-10" upper="10" effort="1000" velocity="100"/>
  </joint>
  <link name="load">
    <inertial><origin xyz="0 0 0"/><mass value="1.0"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="{izz}"/></inertial>
  </link>
</robot>
"""


def motor(rotor_inertia: float) -> px.DCMotor:
    return px.DCMotor(
        resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=rotor_inertia
    )


def one_joint(tmp_path: Path, izz: float) -> px.Robot:
    path = tmp_path / "load.urdf"
    path.write_text(ONE_JOINT.format(izz=izz))
    return px.load_urdf(path, extensions=False)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_elastic_joint_two_mass_closed_forms(tmp_path, seed):
    """A load J_L on a transmission of stiffness c and ratio N from a rotor J_m (plus the
    wave generator's I'): motor held, ω² = c/J_L (locked rotor); motor free, the two-mass
    ω² = c (1/J_L + 1/(N² (J_m + I'))). Both to 1e-12 relative; the held one is the lower, and
    with a rigid gear the joint is held: no vibration mode, refused."""
    rng = np.random.default_rng(seed)
    j_load = rng.uniform(0.05, 2.0)
    c, ratio = rng.uniform(1e3, 1e5), rng.uniform(20.0, 160.0)
    j_rotor, j_input = rng.uniform(1e-6, 1e-4), rng.uniform(0.0, 1e-5)
    robot = one_joint(tmp_path, j_load)
    transmission = px.ElasticTransmission(ratio, c, 1.0, input_inertia=j_input)
    drives = {"axis": px.Drive(motor(j_rotor), transmission)}
    held = first_natural_frequency(robot, drives=drives)
    free = first_natural_frequency(robot, drives=drives, motors="free")
    assert held == pytest.approx(math.sqrt(c / j_load) / (2 * math.pi), rel=1e-12)
    two_mass = math.sqrt(c * (1 / j_load + 1 / (ratio**2 * (j_rotor + j_input))))
    assert free == pytest.approx(two_mass / (2 * math.pi), rel=1e-12)
    assert held < free
    with pytest.raises(InvalidParameter, match="no vibration mode"):
        first_natural_frequency(robot, drives={"axis": px.Drive(motor(j_rotor), px.Gear(ratio))})


def test_bad_inputs(tmp_path):
    robot = one_joint(tmp_path, 0.5)
    drive = px.Drive(motor(1e-5), px.ElasticTransmission(100.0, 1e4, 1.0))
    with pytest.raises(InvalidParameter, match="motors must be one of held, free"):
        first_natural_frequency(robot, drives={"axis": drive}, motors="locked")
    with pytest.raises(NameNotFound):
        first_natural_frequency(robot, drives={"elbow": drive})
    with pytest.raises(InvalidParameter, match="must be a pinext Drive"):
        first_natural_frequency(robot, drives={"axis": 3.0})


@pytest.fixture(scope="module")
def arm() -> px.Robot:
    return px.load_urdf(ROOT / "urdf" / "six_dof_arm.urdf", extensions=False)


def poses() -> np.ndarray:
    return np.array([pick_and_place()(t)[0] for t in np.linspace(0.0, 2.0, POSES)])


def test_six_elastic_joints_against_pinocchio(arm):
    """Six harmonic drives (seeded stiffnesses): with the motors held, f₁ is the lowest of
    √λ₁/2π of diag(c) x = λ M(q) x over the motion's poses, M from Pinocchio's crba (scipy's
    eigh): to 1e-12. With free motors (a zero mode per joint) the first positive frequency is
    higher: the held system is the free one constrained (Rayleigh's interlacing)."""
    rng = np.random.default_rng(7)
    stiffness = rng.uniform(5e3, 5e4, 6)
    drives = {
        name: px.Drive(motor(2e-5), px.ElasticTransmission(100.0, c, 1.0))
        for name, c in zip(arm.model.names[1:], stiffness, strict=True)
    }
    data = arm.model.createData()
    reference = np.inf
    for q in poses():
        mass = pin.crba(arm.model, data, q)
        mass = np.triu(mass) + np.triu(mass, 1).T
        reference = min(reference, math.sqrt(eigh(np.diag(stiffness), mass)[0][0]) / (2 * math.pi))
    held = first_natural_frequency(arm, pick_and_place(), drives=drives)
    assert held == pytest.approx(reference, rel=1e-12)
    assert first_natural_frequency(arm, pick_and_place(), drives=drives, motors="free") > held
    print(f"six harmonic drives: f1 = {held:.4f} Hz (Pinocchio + scipy {reference:.4f} Hz)")


def test_flexible_link_on_an_elastic_hub_between_its_bounds():
    """The flexible arm's bar (sublinks) on a hub whose transmission has stiffness c: f₁ lies
    below both constrained systems — the hub held (the cantilever, f_cant) and the bar held
    rigid (f_rig² = c/M_hh/(2π)²) — and above Dunkerley's bound 1/f² ≤ 1/f_rig² + Σ 1/f_i²
    (the flexibilities add in series; the sum over all the cantilever's modes). c is chosen so
    that f_rig = f_cant: the coupling lowers f₁ most there."""
    robot = px.load_urdf(px.robot_path("flexible_arm"))
    cantilever = px.natural_frequencies(robot, locked_joints=["hub"])
    f_cant = cantilever[cantilever > 0][0]
    m_hh = pin.crba(robot.model, robot.model.createData(), pin.neutral(robot.model))[0, 0]
    c = m_hh * (2 * math.pi * f_cant) ** 2
    drives = {"hub": px.Drive(motor(1e-4), px.ElasticTransmission(50.0, c, 0.0))}
    f1 = first_natural_frequency(robot, drives=drives)
    f_rig = math.sqrt(c / m_hh) / (2 * math.pi)
    dunkerley = 1 / math.sqrt(1 / f_rig**2 + np.sum(1 / cantilever[cantilever > 0] ** 2))
    assert dunkerley <= f1 < min(f_cant, f_rig)
    assert f1 < 0.8 * f_cant  # the transmission's elasticity matters: the old limit missed it
    print(f"elastic hub: f1 = {f1:.4f} Hz; cantilever {f_cant:.4f}, Dunkerley {dunkerley:.4f}")


def test_harmonic_drive_chosen_for_the_frequency_limit(arm):
    """The elbow's harmonic drive for the least drive mass, the other joints rigid and held:
    f₁ = min over the poses of √(c/M_ee(q))/2π (Pinocchio's crba), a closed form per size.
    With min_natural_frequency between the f₁ of the size the torques alone pick and the next
    one, the choice is that next size, its margin f₁/f_min − 1, and the enumeration of the 25
    designs agrees. Without an elastic transmission or a
    flexible link the limit is refused before any work."""
    harmonic = load_harmonic_drives(HARMONIC)
    data = arm.model.createData()
    m_ee = max(pin.crba(arm.model, data, q)[2, 2] for q in poses())
    f1 = {
        n: math.sqrt(h.transmission.stiffness / m_ee) / (2 * math.pi) for n, h in harmonic.items()
    }
    common = {"catalogue": load_catalogue(CATALOGUE), "harmonic_drives": harmonic,
              "minimize": "drive_mass", "samples": 401}  # fmt: skip
    variables = {"elbow": {"motor": "catalogue", "harmonic_drive": "catalogue"}}
    free = optimize(DriveProblem(arm, pick_and_place(), variables, **common), neighbours=False)
    by_torque = free.design["elbow.harmonic_drive"]
    sizes = sorted(harmonic, key=lambda n: harmonic[n].rated_torque)
    stiffer = sizes[sizes.index(by_torque) + 1]
    f_min = 0.5 * (f1[by_torque] + f1[stiffer])
    problem = DriveProblem(arm, pick_and_place(), variables, min_natural_frequency=f_min, **common)
    result = optimize(problem, neighbours=False)
    name = "robot: first natural frequency [Hz]"
    assert result.feasible and result.design["elbow.harmonic_drive"] == stiffer
    assert result.constraints[name] == pytest.approx(f1[stiffer] / f_min - 1, rel=1e-10)
    weaker = problem.evaluate({**result.design, "elbow.harmonic_drive": by_torque})
    assert weaker.margins[name] == pytest.approx(f1[by_torque] / f_min - 1, rel=1e-10)
    from pinext.planning.optimize import enumerate_designs

    designs = enumerate_designs(problem)
    feasible = [(d, e) for d in designs if (e := problem.evaluate(d)).feasible]
    best = min(feasible, key=lambda item: item[1].criteria["drive_mass"])[0]
    assert best == result.design
    with pytest.raises(InvalidParameter, match="needs a flexible link or an elastic"):
        DriveProblem(arm, pick_and_place(), {"elbow": {"motor": "catalogue"}},
                     min_natural_frequency=f_min, **common)  # fmt: skip
    print(f"elbow f1 limit {f_min:.3f} Hz: {by_torque} by torque ({f1[by_torque]:.3f} Hz) -> "
          f"{stiffer} ({f1[stiffer]:.3f} Hz), {result.evaluations} evaluations")  # fmt: skip


def test_efficiency_with_an_elastic_transmission_is_refused(arm):
    """An elastic transmission has no efficiency in pinext's model ((20.98)-(20.99)): given
    with a stiffness it was dropped silently; now refused, naming the key."""
    catalogue = load_catalogue(CATALOGUE)
    with pytest.raises(InvalidParameter, match=r"variables.elbow.efficiency: an elastic"):
        table = {"motor": "catalogue", "ratio": [50, 100], "stiffness": 1e4, "damping": 1.0,
                 "efficiency": 0.8}  # fmt: skip
        DriveProblem(arm, RestToRest([0.0] * 6, [0.1] * 6, 1.0), {"elbow": table},
                     catalogue=catalogue)  # fmt: skip
    elastic = px.Drive(catalogue[next(iter(catalogue))].motor,
                       px.ElasticTransmission(100.0, 1e4, 1.0))  # fmt: skip
    with pytest.raises(InvalidParameter, match="efficiency"):
        DriveProblem(arm, RestToRest([0.0] * 6, [0.1] * 6, 1.0),
                     {"elbow": {"ratio": [50, 100], "efficiency": 0.8}},
                     drives={"elbow": elastic})  # fmt: skip
    # FrequencyLimit is reusable: one mass matrix per pose, any drives
    limit = FrequencyLimit(arm, pick_and_place())
    assert len(limit.masses) == POSES
