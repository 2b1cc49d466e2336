"""Contact deformation on both sides (Vukobratović & Potkonjak §20.5.1, Problem 9): the tool's
spring in series with the environment's layer and mass, against the closed forms of springs
in series — the static force F = k w with 1/k = Σ 1/k_i and the contact duration
π √(m_eff / k) of an undamped impact — and the energy audit."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.contact import Contact, DynamicEnvironment, SeriesCompliance, plane, series_stiffness
from pinext.exceptions import InvalidParameter

MASS = 2.0
G = 9.81
SLIDER = f"""<robot name="slider"><link name="base"/>
<joint name="z" type="prismatic"><parent link="base"/><child link="body"/><axis xyz="0 0 1"/>
<limit lower="-5" upper="5" effort="100" velocity="10"/></joint>
<link name="body"><inertial><mass value="{MASS}"/>
<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
<joint name="tip_joint" type="fixed"><parent link="body"/><child link="tip"/>
<origin xyz="0 0 -0.1"/></joint><link name="tip"/></robot>"""
K_TOOL, K_LAYER, K_MOUNT, M_ENV = 4.0e4, 6.0e4, 2.0e4, 3.0


def _slider(tmp_path, gravity: bool = True, sidecar: str = "") -> px.Robot:
    path = tmp_path / "slider.urdf"
    path.write_text(SLIDER)
    if sidecar:
        path.with_name("slider.pinext.toml").write_text(sidecar)
    robot = px.load_urdf(path)
    if not gravity:
        robot.model.gravity = pin.Motion.Zero()
    return robot


def test_series_compliance_carries_one_force_through_both_sides():
    rng = np.random.default_rng(3)
    for _ in range(20):
        k_t, k_c = rng.uniform(1e3, 1e5, 2)
        d_t, c_c = rng.uniform(0.0, 100.0, 2)
        series = SeriesCompliance(k_t, d_t, k_c, c_c)
        w, w_t, wdot = rng.uniform(0.0, 1e-3), rng.uniform(0.0, 1e-3), rng.normal()
        tool_rate, surface_rate = series.rates(w, w_t, wdot, True)
        assert tool_rate + surface_rate == pytest.approx(wdot, rel=1e-12)
        tool, surface = series.split(w, w_t)
        force = series.force(w, w_t, wdot)
        assert force == pytest.approx(k_t * tool + d_t * tool_rate, rel=1e-12)
        assert force == pytest.approx(k_c * surface + c_c * surface_rate, rel=1e-12)
        dissipation = series.dissipation(w, w_t, wdot, True)
        assert dissipation == pytest.approx(d_t * tool_rate**2 + c_c * surface_rate**2, rel=1e-12)
    undamped = SeriesCompliance(K_TOOL, 0.0, K_LAYER, 0.0)
    assert not undamped.has_state
    assert undamped.force(1e-3, 0.0, 0.0) == pytest.approx(
        K_TOOL * K_LAYER / (K_TOOL + K_LAYER) * 1e-3, rel=1e-15
    )
    assert series_stiffness(K_TOOL, np.inf) == K_TOOL
    assert series_stiffness(K_TOOL, K_LAYER, K_MOUNT) == pytest.approx(
        1.0 / (1 / K_TOOL + 1 / K_LAYER + 1 / K_MOUNT), rel=1e-15
    )


ENVIRONMENTS = {
    "rigid table": (None, [K_TOOL]),
    "mass on a spring (c)": (
        DynamicEnvironment(mass=M_ENV, stiffness=K_MOUNT, damping=300.0),
        [K_TOOL, K_MOUNT],
    ),
    "layer and mass (d)": (
        DynamicEnvironment(
            mass=M_ENV,
            stiffness=K_MOUNT,
            damping=300.0,
            contact_stiffness=K_LAYER,
            contact_damping=80.0,
        ),
        [K_TOOL, K_LAYER, K_MOUNT],
    ),
}


@pytest.mark.parametrize("case", list(ENVIRONMENTS))
def test_static_force_follows_the_series_stiffness(tmp_path, case):
    """A constant push F0 on a body resting on the surface through a compliant tool: at rest
    F = m g + F0, the compression of the tool F/k_t, of the layer F/k_c, of the mount F/k,
    the body's sag F/k_series, and each side's energy F²/(2 k_i)."""
    environment, springs = ENVIRONMENTS[case]
    robot = _slider(tmp_path)
    contact = Contact(plane("tip", (0.0, 0.0, 0.0)), tool_stiffness=K_TOOL, tool_damping=200.0)
    system = px.System(robot, contacts=[contact], environment=environment)
    push = 30.0
    traj = px.simulate(system, 1.5, q0=np.array([0.1]), control=[-push], output_dt=0.01)
    force = MASS * G + push
    out = {k.removeprefix("contact."): v[-1] for k, v in traj.outputs.items()}
    assert out["force"][0] == pytest.approx(force, rel=1e-9)
    assert 0.1 - traj.q[-1, 0] == pytest.approx(force / series_stiffness(*springs), rel=1e-9)
    assert out["tool_deformation"][0] == pytest.approx(force / K_TOOL, rel=1e-9)
    assert out["tool_energy"][0] == pytest.approx(force**2 / (2 * K_TOOL), rel=1e-9)
    environment_energy = sum(force**2 / (2 * k) for k in springs[1:])
    assert out["environment_energy"][0] == pytest.approx(environment_energy, rel=1e-9, abs=1e-15)
    if K_LAYER in springs:
        assert out["surface_deformation"][0] == pytest.approx(force / K_LAYER, rel=1e-9)
    if K_MOUNT in springs:
        assert -out["deformation"][0] == pytest.approx(force / K_MOUNT, rel=1e-9)
    assert traj.energy_balance().max_relative() < 1e-8


@pytest.mark.parametrize(
    ("environment", "tool", "mass"),
    [
        (None, K_TOOL, np.inf),  # a compliant tool on a rigid wall
        (DynamicEnvironment(mass=M_ENV, stiffness=0.0, damping=0.0), K_TOOL, M_ENV),
        (
            DynamicEnvironment(mass=M_ENV, stiffness=0.0, damping=0.0, contact_stiffness=K_LAYER),
            K_TOOL,
            M_ENV,
        ),
    ],
    ids=["wall", "free mass (c)", "layer and free mass (d)"],
)
def test_impact_lasts_half_a_period_of_the_springs_in_series(tmp_path, environment, tool, mass):
    """Without gravity and dampers the body (m) meets the environment mass (m_e, at rest, no
    mount spring) through k = k_t k_c / (k_t + k_c): the contact lasts π √(m_eff / k),
    m_eff = m m_e / (m + m_e), and the velocities come out as in an elastic collision."""
    robot = _slider(tmp_path, gravity=False)
    contact = Contact(plane("tip", (0.0, 0.0, 0.0)), tool_stiffness=tool)
    system = px.System(robot, contacts=[contact], environment=environment)
    v0 = -1.0
    traj = px.simulate(system, 0.1, q0=np.array([0.11]), v0=np.array([v0]))
    names = [e.name for e in traj.events]
    assert names == ["contact:tip", "lift-off:tip"]
    duration = traj.events[1].t - traj.events[0].t
    layer = environment.contact_stiffness if environment is not None else None
    stiffness = series_stiffness(tool, layer or np.inf)
    reduced = MASS if np.isinf(mass) else MASS * mass / (MASS + mass)
    assert duration == pytest.approx(np.pi * np.sqrt(reduced / stiffness), rel=1e-9)
    after = -v0 if np.isinf(mass) else (MASS - mass) / (MASS + mass) * v0
    assert traj.v[-1, 0] == pytest.approx(after, rel=1e-9)
    assert traj.energy_balance().max_relative() < 1e-10


def test_damped_impact_on_both_sides_books_its_losses(tmp_path):
    """Dampers on both sides: the tool's compression is a state; the energy audit balances
    and the body leaves slower, the lost kinetic energy being the dissipated energy."""
    robot = _slider(tmp_path, gravity=False)
    environment = DynamicEnvironment(
        mass=np.inf, stiffness=0.0, damping=0.0, contact_stiffness=K_LAYER, contact_damping=20.0
    )
    contact = Contact(plane("tip", (0.0, 0.0, 0.0)), tool_stiffness=K_TOOL, tool_damping=30.0)
    system = px.System(robot, contacts=[contact], environment=environment)
    assert (
        system.layout["contact.environment"].stop - system.layout["contact.environment"].start == 4
    )
    traj = px.simulate(system, 0.1, q0=np.array([0.11]), v0=np.array([-1.0]))
    assert [e.name for e in traj.events] == ["contact:tip", "lift-off:tip"]
    assert traj.energy_balance().max_relative() < 1e-9
    lost = 0.5 * MASS * (1.0 - traj.v[-1, 0] ** 2)
    stored = (
        traj.outputs["contact.tool_energy"][-1, 0]
        + traj.outputs["contact.environment_energy"][-1, 0]
    )
    assert lost == pytest.approx(traj.state("dissipated_energy")[-1] + stored, rel=1e-9)
    assert 0.0 < traj.v[-1, 0] < 1.0


def test_a_stiff_tool_tends_to_the_rigid_tool(tmp_path):
    robot = _slider(tmp_path, gravity=False)
    environment = DynamicEnvironment(
        mass=M_ENV, stiffness=0.0, damping=0.0, contact_stiffness=K_LAYER
    )
    durations = []
    for tool in (None, 1e9):
        contact = Contact(plane("tip", (0.0, 0.0, 0.0)), tool_stiffness=tool)
        system = px.System(robot, contacts=[contact], environment=environment)
        traj = px.simulate(system, 0.1, q0=np.array([0.11]), v0=np.array([-1.0]))
        durations.append(traj.events[1].t - traj.events[0].t)
    assert durations[1] == pytest.approx(durations[0], rel=1e-4)


def test_tool_stiffness_in_the_contacts_table(tmp_path):
    robot = _slider(
        tmp_path,
        sidecar=(
            '[[contacts]]\nframe = "tip"\ntool_stiffness = 4.0e4\ntool_damping = 5.0\n'
            "[environment]\nmass = 3.0\nstiffness = 2.0e4\ncontact_stiffness = 6.0e4\n"
        ),
    )
    system = px.System(robot)
    contact = next(c for c in system.components if c.name == "contact")
    assert contact.compliance == SeriesCompliance(4.0e4, 5.0, 6.0e4, 0.0)
    assert contact.contacts[0].tool_stiffness == 4.0e4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tool_stiffness": 0.0}, "tool_stiffness must be None or a finite number > 0"),
        ({"tool_stiffness": np.nan}, "tool_stiffness must be None or a finite number > 0"),
        ({"tool_damping": 1.0}, "needs a tool_stiffness"),
        ({"tool_stiffness": 1.0, "tool_damping": -1.0}, "tool_damping"),
        ({"tool_stiffness": 1.0, "friction": 0.3}, "frictional"),
    ],
)
def test_bad_tools_raise(kwargs, message):
    with pytest.raises(InvalidParameter, match=message):
        Contact(plane("tip", (0.0, 0.0, 0.0)), **kwargs)


def test_a_compliant_tool_needs_a_surface_contact(tmp_path):
    with pytest.raises(InvalidParameter, match="unilateral surface"):
        Contact(px.point_contact("tip"), tool_stiffness=1e4)
    robot = _slider(tmp_path)
    contacts = [
        Contact(plane("tip", (0.0, 0.0, 0.0)), tool_stiffness=1e4),
        Contact(plane("tip", (0.0, 0.0, -1.0)), name="floor"),
    ]
    with pytest.raises(InvalidParameter, match="exactly one"):
        px.System(robot, contacts=contacts)


def test_peg_in_hole_example_presses_through_both_compliant_parts():
    """examples/peg_in_hole.py: the peg slides down the hole (px.peg_in_hole rows held) onto its
    bottom; at rest the impedance law's K_z pushes through peg, part and fixture in series,
    F = P k / (k + K_z) with 1/k = 1/k_peg + 1/k_part + 1/k_fixture."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "peg_in_hole.py"
    spec = importlib.util.spec_from_file_location("peg_in_hole", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    summary = module.main([])
    assert summary["final_force"] == pytest.approx(summary["expected_force"], rel=1e-6)
    assert summary["peg_compression_um"] == pytest.approx(
        1e6 * summary["final_force"] / module.K_PEG, rel=1e-6
    )
    assert summary["part_compression_um"] == pytest.approx(
        1e6 * summary["final_force"] / module.K_PART, rel=1e-6
    )
    assert summary["energy_balance"] < 1e-8


def test_a_tool_with_a_mass_is_a_body_on_a_spring(tmp_path):
    """``tool_mass`` in the contacts table: the tool's mass m_t on its spring k_t at the
    contact frame. Held body: the tool vibrates at √(k_t/m_t); resting on the table under a
    push F0: the spring carries m g + F0, the table (m + m_t) g + F0."""
    k_t, m_t, push = 3.0e4, 0.2, 15.0
    robot = _slider(
        tmp_path,
        sidecar=(
            '[[contacts]]\nframe = "tip"\nsurface = "ground"\npoint = [0.0, 0.0, 0.0]\n'
            f"tool_stiffness = {k_t}\ntool_mass = {m_t}\ntool_damping = 400.0\n"
            "tool_axis = [0.0, 0.0, 1.0]\n"
        ),
    )
    assert robot.nv == 2 and robot.extensions.contacts[0]["frame"] == "tip_tool"
    f = px.natural_frequencies(robot, locked_joints=["z"])
    assert f == pytest.approx([np.sqrt(k_t / m_t) / (2 * np.pi)], rel=1e-12)
    system = px.System(robot)
    q0 = np.array([0.1, 0.0])  # the tool's body touches the ground, its spring at rest
    traj = px.simulate(system, 1.0, q0=q0, control=[-push, 0.0], output_dt=0.01)
    spring = (MASS * G + push) / k_t
    assert traj.q[-1, 1] == pytest.approx(spring, rel=1e-9)  # the body sinks onto the tool
    assert traj.q[-1, 0] == pytest.approx(0.1 - spring, rel=1e-9)
    assert traj.outputs["contact.force"][-1, 0] == pytest.approx((MASS + m_t) * G + push, rel=1e-9)
    assert traj.energy_balance().max_relative() < 1e-8
    with pytest.raises(InvalidParameter, match="compliant_tool"):
        Contact.from_dict({"frame": "tip", "tool_mass": 1.0})
