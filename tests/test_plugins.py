"""Plug-ins: the one ordered list of pinext.plugins, and a contact law that is not pinext's.

The toy contact law below (a frame point on a horizontal plane, unilateral, with plastic
impacts) is written entirely in this file as a :class:`pinext.Component` and passed through
``System(robot, components=[...])``: adding a contact law touches no file of the library. It
is checked against closed forms (a point mass resting on the plane: reaction m g, free sliding
along it) and against Pinocchio's ``impulseDynamics`` (a double pendulum's tip hitting it).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext import plugins
from pinext.simulation.component import ConstraintRows, Event, ModeState, RowKind

G = 9.81


class Touch(ModeState):
    FREE = "free"
    CLOSED = "closed"


class PointOnPlane(px.Component):
    """A frame point above the plane z = height: free, or held on it by one unilateral row
    (Baumgarte-stabilised, reaction λ ≥ 0 along +z); it closes with a plastic impact and lifts
    off when λ falls through 0."""

    def __init__(self, frame: str, height: float = 0.0, omega: float = 20.0) -> None:
        super().__init__()
        self.name = "toy_plane"
        self.frame, self.height, self.omega = frame, height, omega
        self.impacts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def bind(self, system: px.System) -> None:
        self.model = system.model
        self.data = system.model.createData()
        self.fid = system.model.getFrameId(self.frame)
        self.nq, self.nv = system.model.nq, system.model.nv

    # -- kinematics of the gap g(q) = z - height ------------------------------------------
    def _split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return x[: self.nq], x[self.nq : self.nq + self.nv]

    def _kinematics(self, q: np.ndarray, v: np.ndarray):
        """(g, ġ, J (1, nv), J̇ v)."""
        model, data = self.model, self.data
        pin.forwardKinematics(model, data, q, v, np.zeros(self.nv))
        pin.updateFramePlacements(model, data)
        jac = pin.computeFrameJacobian(model, data, q, self.fid, pin.LOCAL_WORLD_ALIGNED)[2:3]
        drift = pin.getFrameClassicalAcceleration(model, data, self.fid, pin.LOCAL_WORLD_ALIGNED)
        gap = float(data.oMf[self.fid].translation[2] - self.height)
        return gap, float(jac[0] @ v), jac, float(drift.linear[2])

    def gap(self, t: float, x: np.ndarray) -> float:
        return self._kinematics(*self._split(x))[0]

    # -- the Component hooks -----------------------------------------------------------------
    def initial_mode(self, t, x, trial):
        gap, rate, _, _ = self._kinematics(*self._split(x))
        if gap <= 1e-12 and rate <= 0.0:
            if trial(x, Touch.CLOSED).force(self.name, 1)[0] >= 0.0:
                return Touch.CLOSED
        return Touch.FREE

    def is_constrained(self, mode) -> bool:
        return mode is Touch.CLOSED

    def constraint_rows(self, t, x, q, v, mode, data):
        gap, rate, jac, drift = self._kinematics(q, v)
        w = self.omega
        gamma = drift + 2.0 * w * rate + w * w * gap  # J a + γ = 0  <=>  g̈ = -2ω ġ - ω² g
        return ConstraintRows(jac, np.array([gamma]), kind=RowKind.UNILATERAL)

    def events(self, mode):
        if mode is Touch.FREE:
            return [Event("toy:touch", self.gap, -1.0, self._impact)]
        return [Event("toy:lift-off", self._reaction, -1.0, self._lift_off, dynamic=True)]

    def _reaction(self, t, x, step) -> float:
        return float(step.force(self.name, 1)[0])

    def _impact(self, t, x, mode, trial):
        """Plastic impact: v⁺ = v − M⁻¹Jᵀ (J M⁻¹ Jᵀ)⁻¹ J v (Vukobratović & Potkonjak
        (20.90)–(20.91) with one row)."""
        x = np.array(x, dtype=float)
        q, v = self._split(x)
        _, _, jac, _ = self._kinematics(q, v)
        mass = pin.crba(self.model, self.data, q)
        mass = np.triu(mass) + np.triu(mass, 1).T
        m_inv_jt = np.linalg.solve(mass, jac.T)
        impulse = -np.linalg.solve(jac @ m_inv_jt, jac @ v)
        v_plus = v + m_inv_jt @ impulse
        self.impacts.append((q.copy(), v.copy(), v_plus.copy()))
        x[self.nq : self.nq + self.nv] = v_plus
        return x, Touch.CLOSED, {"impulse": impulse}

    def _lift_off(self, t, x, mode, trial):
        return np.array(x, dtype=float), Touch.FREE, {}

    def outputs(self, t, x, q, v, u, mode, step):
        return {"force": step.force(self.name, 1), "gap": np.array([self.gap(t, x)])}


POINT_MASS = """<robot name="point_mass">
  <link name="world"/>
  <link name="slide_x"/><link name="slide_y"/>
  <link name="ball">
    <inertial><mass value="{mass}"/>
      <inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="x" type="prismatic"><parent link="world"/><child link="slide_x"/>
    <axis xyz="1 0 0"/><limit lower="-10" upper="10" effort="100" velocity="100"/></joint>
  <joint name="y" type="prismatic"><parent link="slide_x"/><child link="slide_y"/>
    <axis xyz="0 1 0"/><limit lower="-10" upper="10" effort="100" velocity="100"/></joint>
  <joint name="z" type="prismatic"><parent link="slide_y"/><child link="ball"/>
    <axis xyz="0 0 1"/><limit lower="-10" upper="10" effort="100" velocity="100"/></joint>
</robot>"""

DOUBLE_PENDULUM = """<robot name="double_pendulum">
  <link name="world"/>
  <link name="upper">
    <inertial><origin xyz="0.25 0 0"/><mass value="1.0"/>
      <inertia ixx="1e-3" iyy="0.021" izz="0.021" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="lower">
    <inertial><origin xyz="0.2 0 0"/><mass value="0.7"/>
      <inertia ixx="1e-3" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="tip"/>
  <joint name="shoulder" type="revolute"><parent link="world"/><child link="upper"/>
    <origin xyz="0 0 1.0"/><axis xyz="0 1 0"/>
    <limit lower="-6" upper="6" effort="100" velocity="100"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="lower"/>
    <origin xyz="0.5 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-6" upper="6" effort="100" velocity="100"/></joint>
  <joint name="tip_joint" type="fixed"><parent link="lower"/><child link="tip"/>
    <origin xyz="0.45 0 0"/></joint>
</robot>"""


def _robot(xml: str) -> px.Robot:
    return px.Robot.from_model(pin.buildModelFromXML(xml))


def test_the_plugin_list_is_one_ordered_tuple_that_the_system_receives():
    """One list, order by position (the layout order of the components), handed to System
    once; ``plugins=()`` assembles the given components alone."""
    names = [f.__name__ for f in plugins.PLUGINS]
    assert names == [
        "build_support_coupling",
        "build_drives",
        "build_joint_limits",
        "build_effort_saturation",
        "build_joint_friction",
        "build_contacts",
        "build_frictional_contacts",
        "build_loops",
        "build_mimic",
    ]
    assert px.System.default_plugins is plugins.PLUGINS
    robot = _robot(POINT_MASS.format(mass=2.0))
    assert [c.name for c in px.System(robot).components] == ["joint_limits"]
    assert px.System(robot).plugins == plugins.PLUGINS
    toy = PointOnPlane("ball")
    bare = px.System(robot, components=[toy], plugins=())
    assert bare.components == [toy] and bare.plugins == ()
    # a plug-in factory of user code runs where the list puts it
    seen = []

    def factory(robot, options):
        seen.append(sorted(options))
        return None

    px.System(robot, plugins=[*plugins.PLUGINS, factory])
    assert seen and "contacts" in seen[0] and "joint_limits" in seen[0]


@pytest.mark.parametrize("with_plugins", [True, False])
def test_a_point_mass_rests_on_the_toy_plane_with_reaction_mg(with_plugins):
    """Closed forms: the reaction is m g, the mass slides along the plane at its start
    velocity, the height stays 0 (with pinext's plug-ins beside it, or alone)."""
    mass = 2.0
    robot = _robot(POINT_MASS.format(mass=mass))
    toy = PointOnPlane("ball")
    extra = {} if with_plugins else {"plugins": ()}
    system = px.System(robot, components=[toy], **extra)
    v0 = np.array([0.3, -0.2, 0.0])
    assert system.initial_phase(0.0, system.initial_state(np.zeros(3), v0)).get("toy_plane") is (
        Touch.CLOSED
    )
    traj = px.simulate(system, 0.5, q0=np.zeros(3), v0=v0, output_dt=0.05)
    force = traj.outputs["toy_plane.force"][:, 0]
    drift = 1e-11  # [m] the height the integrator (atol 1e-12) lets drift, held by Baumgarte
    assert np.abs(traj.q[:, 2]).max() < drift
    # λ = m (g + ω² z + 2ω ż): m g up to the stabilisation of that drift
    assert np.abs(force - mass * G).max() < mass * toy.omega**2 * drift
    assert np.allclose(traj.q[:, 0], 0.3 * traj.t, atol=1e-10)
    assert np.allclose(traj.q[:, 1], -0.2 * traj.t, atol=1e-10)
    assert not traj.events  # it never lifts off


def test_a_double_pendulum_hits_the_toy_plane_as_impulse_dynamics_says():
    """The pendulum's tip falls onto the plane z = 0.35: the toy law's plastic impact equals
    Pinocchio's impulseDynamics (r = 0) at the located contact, and the tip stays on the
    plane afterwards, pushed by a positive reaction."""
    robot = _robot(DOUBLE_PENDULUM)
    model = robot.model
    toy = PointOnPlane("tip", height=0.35)
    system = px.System(robot, components=[toy])
    traj = px.simulate(system, 0.8, q0=np.array([0.0, 0.0]), output_dt=0.01)
    assert [e.name for e in traj.events][:1] == ["toy:touch"]
    assert len(toy.impacts) >= 1
    q, v_minus, v_plus = toy.impacts[0]
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    fid = model.getFrameId("tip")
    assert abs(data.oMf[fid].translation[2] - 0.35) < 1e-9  # located on the plane
    jac = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)[2:3]
    assert float(jac[0] @ v_minus) < -0.5  # a real impact
    reference = pin.impulseDynamics(model, model.createData(), q, v_minus, jac, 0.0, 0.0)
    scale = 1.0 + np.abs(v_minus).max()
    assert np.abs(v_plus - reference).max() < 1e-12 * scale
    assert abs(float(jac[0] @ v_plus)) < 1e-12 * scale  # plastic: the tip stops on the plane
    # closed from the impact to the lift-off: on the plane, pushed by a positive reaction
    touch, lift = traj.events[0].t, traj.events[1].t
    assert traj.events[1].name == "toy:lift-off"
    closed = (traj.t > touch + 1e-9) & (traj.t < lift - 1e-9)
    assert closed.sum() > 10
    assert np.abs(traj.outputs["toy_plane.gap"][closed, 0]).max() < 1e-9
    assert traj.outputs["toy_plane.force"][closed, 0].min() > 0.0
    # the impact's loss is the kinetic energy the plastic impact takes (½ Δvᵀ M Δv)
    mass = pin.crba(model, model.createData(), q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    dv = v_minus - v_plus
    assert traj.events[0].info["energy_loss"] == pytest.approx(0.5 * dv @ mass @ dv, rel=1e-10)
