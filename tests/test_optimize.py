"""Optimal design (pinext.planning.optimize): closed forms, enumeration, the six-DOF arm's
drives, a flexible link's section, bad specifications."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

import pinext as px
from pinext.exceptions import FileFormatError, InfeasibleDesign, InvalidParameter
from pinext.planning import (
    Choice,
    Continuous,
    DriveProblem,
    ElasticTracking,
    Evaluation,
    Problem,
    RestToRest,
    load_catalogue,
    load_harmonic_drives,
    optimize,
    run_design,
    write_design_spec,
    write_optimize_html,
)
from pinext.planning.optimize import enumerate_designs
from pinext.visualization import export_html
from tests.models import pick_and_place

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "examples" / "dc_motors.toml"
JOINTS = ["shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3"]

ONE_JOINT = """<?xml version="1.0"?>
<robot name="load">
  <link name="base"/>
  <joint name="axis" type="{kind}">
    <parent link="base"/><child link="load"/>
    <axis xyz="0 0 1"/>
    <limit lower="-10" upper="10" effort="1000" velocity="100"/>
  </joint>
  <link name="load">
    <inertial><origin xyz="0 0 0"/><mass value="{mass}"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="{izz}"/></inertial>
  </link>
</robot>
"""


def one_joint(tmp_path: Path, kind: str, mass: float, izz: float) -> px.Robot:
    path = tmp_path / f"{kind}.urdf"
    path.write_text(ONE_JOINT.format(kind=kind, mass=mass, izz=izz))
    return px.load_urdf(path, extensions=False)


def motor(rotor_inertia: float) -> px.DCMotor:
    return px.DCMotor(
        resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=rotor_inertia
    )


def peak_acceleration(dq: float, duration: float) -> float:
    """Largest q̈ of the rest-to-rest law h(s) = 35s⁴ − 84s⁵ + 70s⁶ − 20s⁷: h''(s) = 420s² −
    1680s³ + 2100s⁴ − 840s⁵ is largest where h'''(s)/840 = s(1 − 6s + 10s² − 5s³) = 0."""
    roots = np.roots([-5.0, 10.0, -6.0, 1.0])
    s = min(r.real for r in roots if abs(r.imag) < 1e-12 and 0 < r.real < 0.5)
    return (420 * s**2 - 1680 * s**3 + 2100 * s**4 - 840 * s**5) * dq / duration**2


def test_inertia_matching(tmp_path):
    """A pure inertia J_L turned rest to rest through a lossless gear N by a rotor J_m (no
    gravity, no friction): the motor torque is T = J_m θ̈ + τ/N with θ̈ = N q̈ and τ = J_L q̈,

        T(t) = (J_m N + J_L/N) q̈(t),   max|T| = (J_m N + J_L/N) max|q̈|,

    and d/dN (J_m N + J_L/N) = J_m − J_L/N² = 0 gives N* = √(J_L/J_m), whatever the law. The
    peak over the samples is the same function of N times the sampled max|q̈|, so the optimum
    is exact; bounded Brent finds it to its tolerance (1e-7 of the bracket) — checked to 1e-4
    relative (the criterion is flat at the optimum: the second derivative 2J_L/N³ gives a
    relative change of ~1e-8 for a 1e-4 error, the level of the solver's function tolerance)."""
    j_load, j_rotor = 0.5, 2.0e-5
    robot = one_joint(tmp_path, "revolute", 1.0, j_load)
    problem = DriveProblem(
        robot,
        RestToRest([0.0], [1.0], 1.0),
        {"axis": {"ratio": {"low": 1.0, "high": 1000.0}}},
        drives={"axis": px.Drive(motor(j_rotor), px.Gear(1.0))},
        minimize="peak_motor_torque",
        gravity=False,
        samples=401,
    )
    result = optimize(problem)
    expected = math.sqrt(j_load / j_rotor)
    assert result.design["axis.ratio"] == pytest.approx(expected, rel=1e-4)
    assert "minimize_scalar" in result.method
    assert result.evaluations < 60
    # the value is the closed form at the optimum, 2 √(J_L J_m) max|q̈|, with the peak of the
    # 401 samples: ~ (h/2)² |q⃛⃛|/(2|q̈|) below the law's, 3e-5 relative here
    a_max = peak_acceleration(1.0, 1.0)
    assert result.objective == pytest.approx(2 * math.sqrt(j_load * j_rotor) * a_max, rel=1e-4)


def test_inertia_matching_with_a_load_torque(tmp_path):
    """A mass m lifted rest to rest by a vertical screw of ratio N [rad/m] from a rotor J_m:
    the load force is m(ẍ + g) (a pure inertia m plus the constant load τ_L = m g), so

        T(t) = J_m N ẍ(t) + (m ẍ(t) + m g)/N = (J_m N + m/N) ẍ(t) + m g/N,

    largest at the largest ẍ = a (at ẍ = −a it is smaller in magnitude for g > 0), and
    d/dN (J_m N a + (m a + τ_L)/N) = 0 gives N* = √((m a + τ_L)/(J_m a)), which moves above
    √(m/J_m) by √(1 + g/a). a is the law's peak acceleration (peak_acceleration); the samples
    (2001 over the move) reach it to ~1e-6 relative, hence the 1e-4 tolerance."""
    mass, j_rotor, stroke = 2.0, 1.0e-5, 0.5
    robot = one_joint(tmp_path, "prismatic", mass, 0.1)
    problem = DriveProblem(
        robot,
        RestToRest([0.0], [stroke], 1.0),
        {"axis": {"ratio": {"low": 10.0, "high": 5000.0}}},
        drives={"axis": px.Drive(motor(j_rotor), px.Gear(1.0))},
        minimize="peak_motor_torque",
        samples=2001,
    )
    result = optimize(problem)
    a = peak_acceleration(stroke, 1.0)
    g = 9.81
    expected = math.sqrt((mass * a + mass * g) / (j_rotor * a))
    assert result.design["axis.ratio"] == pytest.approx(expected, rel=1e-4)
    assert result.design["axis.ratio"] > 1.5 * math.sqrt(mass / j_rotor)  # the optimum moved


@pytest.fixture(scope="module")
def arm() -> px.Robot:
    return px.load_urdf(ROOT / "urdf" / "six_dof_arm.urdf", extensions=False)


RATIOS = [20.0, 30.0, 50.0, 80.0, 100.0, 120.0, 160.0, 200.0]


def test_catalogue_problem_equals_enumeration(arm):
    """Two joints × five motors × eight standard ratios (1600 designs), criterion motor mass
    + 0.02 kg/J × copper losses (a weighted sum: one optimum, not a tie between ratios). The
    exhaustive enumeration's best design (least violation, then criterion) is the reference;
    differential evolution with integrality finds it both joint by joint (the screening's
    constraints each read one joint) and over the four variables at once."""
    problem = DriveProblem(
        arm,
        pick_and_place(),
        {j: {"motor": "catalogue", "ratio": RATIOS, "efficiency": 0.85} for j in JOINTS[1:3]},
        catalogue=load_catalogue(CATALOGUE),
        minimize=["motor_mass", "copper_loss"],
        weights=[1.0, 0.02],
        samples=201,
    )
    designs = list(enumerate_designs(problem))
    assert len(designs) == 5 * 8 * 5 * 8

    def rank(design):
        e = problem.evaluate(design)
        return (e.violation, e.criteria["motor_mass"] + 0.02 * e.criteria["copper_loss"])

    ranks = [rank(d) for d in designs]
    best = designs[int(np.argmin([r[1] if r[0] == 0 else np.inf for r in ranks]))]
    second = sorted(r[1] for r in ranks if r[0] == 0)[:2]
    assert second[1] - second[0] > 1e-9  # a unique optimum

    by_joint = optimize(problem, seed=1)
    assert by_joint.design == best
    assert by_joint.evaluations <= 2 * 40 + 1
    together = optimize(problem, seed=1, decompose=False)
    assert together.design == best
    assert together.evaluations < len(designs)
    print(
        f"catalogue problem: optimum {best}; evaluations joint by joint "
        f"{by_joint.evaluations}, all at once {together.evaluations}, enumeration {len(designs)}"
    )


SPEC = """
title = "six_dof_arm: lightest drives"
robot = "{root}/urdf/six_dof_arm.urdf"
extensions = false
catalogue = "{root}/examples/dc_motors.toml"
samples = 401

[motion]
law = "spline"
times = [0.0, 0.25, 0.6, 1.0, 1.4, 1.75, 2.0]
positions = [
    [0.0, 0.6, 1.2, 0.2, -1.2, 0.0],
    "free",
    [0.15, 0.35, 1.0, 0.4, -1.2, 0.3],
    [0.8, 0.3, 0.9, 0.4, -1.0, 0.8],
    [1.4, 0.35, 1.0, 0.3, -0.9, 1.2],
    "free",
    [1.5, 0.6, 1.25, 0.1, -0.9, 1.3],
]

[objective]
minimize = "motor_mass"
"""


def write_spec(tmp_path: Path, extra: str = "", *, variables: str | None = None) -> Path:
    if variables is None:
        variables = "".join(
            f'\n[variables.{j}]\nmotor = "catalogue"\n'
            "ratio = [30.0, 50.0, 80.0, 100.0, 120.0, 160.0]\nefficiency = 0.85\n"
            for j in JOINTS
        )
        variables += "\n[limits.shoulder_lift]\nmax_winding_temperature = 100.0\n"
    path = tmp_path / "spec.toml"
    path.write_text(SPEC.format(root=ROOT) + variables + extra)
    return path


def test_six_dof_arm_lightest_drives_screened(tmp_path):
    """The pick-and-place of examples/size_drives.py, drives from the catalogue for the least
    total motor mass: every screened limit met, and each catalogue neighbour (a motor one
    size lighter on one joint, with any standard ratio) exceeds a limit — in the report too.
    The lightest motor is 0.13 kg; the shoulder lift needs the 1.1 kg one and the elbow the
    0.39 kg one (their RMS torques), the others the lightest: 4 × 0.13 + 1.1 + 0.39 kg."""
    result = optimize(write_spec(tmp_path))
    assert result.feasible and min(result.constraints.values()) >= 0
    assert result.objective == pytest.approx(4 * 0.13 + 1.1 + 0.39, abs=1e-12)
    assert result.design["shoulder_lift.motor"] == "DC52-48V-250W"
    assert result.design["elbow.motor"] == "DC32-48V-120W"
    assert [n.variable for n in result.neighbours] == ["shoulder_lift.motor", "elbow.motor"]
    assert not any(n.feasible for n in result.neighbours)
    assert all(n.margin < 0 for n in result.neighbours)
    text = result.table()
    assert "catalogue neighbours" in text and text.count("FAIL") >= 2
    html = write_optimize_html(result, tmp_path / "optimal.html")
    page = html.read_text()
    assert "Catalogue neighbours" in page and "DC40-48V-150W" in page
    # the result reloads as a `pinext design` specification, and passes
    spec = write_design_spec(result, tmp_path / "out" / "chosen.toml")
    checked = run_design(spec, html=tmp_path / "chosen.html")
    assert checked.check.passed


@pytest.mark.parametrize(
    "transmission",
    ["ratio = [50.0, 80.0, 100.0, 160.0]\nefficiency = 0.85\n",
     "ratio = { low = 30.0, high = 160.0 }\nstiffness = 1.5e4\ndamping = 8.0\n"],
    ids=["gear", "elastic"],
)  # fmt: skip
def test_the_result_reloads_as_a_design_specification(tmp_path, transmission):
    """write_design_spec's file, read by `pinext design` (read_design, run_design), holds the
    chosen motor and transmission, and its check gives every margin of the optimization (the
    same inverse dynamics on the same samples): to 1e-12, a standard ratio with a gear and a
    continuous ratio with an elastic transmission alike."""
    from pinext.planning import read_design

    spec = write_spec(
        tmp_path, variables=f'\n[variables.elbow]\nmotor = "catalogue"\n{transmission}'
    )
    spec.write_text(spec.read_text().replace("samples = 401", "samples = 101"))
    result = optimize(spec, neighbours=False)
    written = write_design_spec(result, tmp_path / "elsewhere" / "chosen.toml")
    reloaded = read_design(written)
    drive = reloaded.drives["elbow"]
    chosen = load_catalogue(CATALOGUE)[result.design["elbow.motor"]]
    assert drive.actuator == chosen.motor
    assert drive.ratio == result.design["elbow.ratio"]
    assert isinstance(drive.transmission, px.ElasticTransmission) == ("stiffness" in transmission)
    checked = run_design(written, html=tmp_path / "chosen.html")
    margins = {f"{r.name}: {r.quantity}": r.margin for r in checked.check.rows}
    assert margins.keys() == result.constraints.keys()
    for name, margin in result.constraints.items():
        assert margins[name] == pytest.approx(margin, rel=1e-12, abs=1e-12), name
    assert checked.check.passed


@pytest.mark.slow
def test_six_dof_arm_lightest_drives_simulated(tmp_path):
    """The lightest screened drives simulated with elastic transmissions (stiffness and
    damping of examples/size_drives.py) under feedforward + motor PD: tracking error within
    20 mrad and every motor limit met in the run; the neighbours fail the screening."""
    from pinext.planning import ElasticTracking

    problem = DriveProblem.from_spec(write_spec(tmp_path))
    stiffness = dict(zip(JOINTS, (2.0e4, 2.0e4, 1.5e4, 4.0e3, 4.0e3, 4.0e3), strict=True))
    damping = dict(zip(JOINTS, (10.0, 10.0, 8.0, 2.0, 2.0, 2.0), strict=True))
    problem.verify = ElasticTracking(problem, stiffness, damping, 0.02)
    result = optimize(problem)
    simulated = {k: m for k, m in result.constraints.items() if k.startswith("verify:")}
    assert len(simulated) >= 6 and min(simulated.values()) >= 0
    assert result.verifications >= 1
    assert not any(n.feasible for n in result.neighbours)


def tube(outer: float, wall: float) -> tuple[float, float]:
    """(area [m²], second moment of area [m⁴]) of a round tube."""
    inner = outer - 2 * wall
    return math.pi / 4 * (outer**2 - inner**2), math.pi / 64 * (outer**4 - inner**4)


E_STEEL, RHO_STEEL, LENGTH, TIP_FORCE = 2.0e11, 7850.0, 2.0, 20.0


class TubeArm:
    """The flexible arm's bar as a steel tube: first clamped-free frequency (hub locked) and
    tip deflection under a transverse tip force, from the sublink model."""

    def __init__(self, sublinks: int) -> None:
        self.sublinks = sublinks

    def robot(self, outer: float, wall: float) -> px.Robot:
        area, inertia = tube(outer, wall)
        link = px.FlexibleLink(
            "bar", self.sublinks, E_STEEL, inertia, mass_per_length=RHO_STEEL * area
        )
        return px.load_urdf(px.robot_path("flexible_arm"), flexible=[link], extensions=False)

    def __call__(self, design: dict) -> tuple[float, float, float]:
        outer, wall = design["outer_diameter"], design["wall_thickness"]
        robot = self.robot(outer, wall)
        f1 = float(px.natural_frequencies(robot, locked_joints=["hub"])[0])
        q = px.static_deflection(
            robot, None, frame="tip", wrench=[0, TIP_FORCE, 0, 0, 0, 0], locked_joints=["hub"]
        )
        import pinocchio as pin

        data = robot.model.createData()
        pin.framesForwardKinematics(robot.model, data, q)
        deflection = float(abs(data.oMf[robot.model.getFrameId("tip")].translation[1]))
        mass = RHO_STEEL * tube(outer, wall)[0] * LENGTH
        return mass, f1, deflection


def test_lightest_tube_section():
    """The lightest steel tube (outer diameter D, wall t) for the flexible arm's 2 m bar with
    f1 ≥ 14 Hz (hub locked) and a tip deflection ≤ 5 mm under 20 N. Euler–Bernoulli cantilever:

        f1 = (1.875104²/2π) √(EI/(ρA L⁴)),   δ = F L³/(3EI),

    with A = π(D² − d²)/4, I = π(D⁴ − d⁴)/64, d = D − 2t. For a thin wall the mass ∝ D t and
    I ≈ π D³ t/8: at a given I the mass falls as 1/D², so the wall goes to its lower bound
    (0.5 mm) and D grows until δ binds (D ≈ 65 mm); f1 ≈ (1.875²/2π) √(E/ρ) D/(√8 L²) ≈ 16 Hz
    then holds with a margin. The closed forms at the section found: δ equals its limit, f1
    exceeds its bound, and both equal the model's values. ν = 20
    sublinks (Celentano (2008) §5): the model's f1 and δ are within 0.06 % of the closed forms
    (measured; the discretisation error falls as 1/ν²), so the tolerances are 0.2 % on f1 and
    0.5 % on δ. The optimum is checked against the closed-form problem solved directly (scipy's
    SLSQP) to 1 % in mass."""
    from scipy.optimize import minimize

    f_min, delta_max = 14.0, 0.005
    arm = TubeArm(20)

    def evaluate(design):
        mass, f1, deflection = arm(design)
        return Evaluation(
            {"mass": mass},
            {"first frequency": f1 / f_min - 1.0, "tip deflection": 1.0 - deflection / delta_max},
        )

    problem = Problem(
        [Continuous("outer_diameter", 0.02, 0.12), Continuous("wall_thickness", 0.0005, 0.005)],
        evaluate,
        "mass",
    )
    result = optimize(problem, seed=3, maxiter=15, popsize=6)
    assert result.feasible
    outer, wall = result.design["outer_diameter"], result.design["wall_thickness"]
    area, inertia = tube(outer, wall)
    f1_closed = (
        1.875104**2 / (2 * math.pi) * math.sqrt(E_STEEL * inertia / (RHO_STEEL * area * LENGTH**4))
    )
    delta_closed = TIP_FORCE * LENGTH**3 / (3 * E_STEEL * inertia)
    mass, f1, deflection = arm(result.design)
    assert f1 == pytest.approx(f1_closed, rel=2e-3)
    assert deflection == pytest.approx(delta_closed, rel=5e-3)
    assert wall == pytest.approx(0.0005, rel=1e-3)  # at its bound
    assert delta_closed == pytest.approx(delta_max, rel=5e-3)  # binds
    assert f1_closed > 1.1 * f_min  # holds with a margin
    assert "tip deflection" in result.binding(0.01)

    def closed(x):
        a, i = tube(*x)
        return a, i

    reference = minimize(
        lambda x: RHO_STEEL * closed(x)[0] * LENGTH,
        [0.06, 0.003],
        method="SLSQP",
        bounds=[(0.02, 0.12), (0.0005, 0.005)],
        constraints=[
            {
                "type": "ineq",
                "fun": lambda x: (
                    1.875104**2
                    / (2 * math.pi)
                    * math.sqrt(E_STEEL * closed(x)[1] / (RHO_STEEL * closed(x)[0] * LENGTH**4))
                    / f_min
                    - 1
                ),
            },
            {
                "type": "ineq",
                "fun": lambda x: (
                    1 - TIP_FORCE * LENGTH**3 / (3 * E_STEEL * closed(x)[1]) / delta_max
                ),
            },
        ],
    )
    assert reference.success
    assert result.objective == pytest.approx(reference.fun, rel=1e-2)
    print(
        f"tube: D = {1e3 * outer:.2f} mm, t = {1e3 * wall:.3f} mm, mass {result.objective:.4f} "
        f"kg (closed-form optimum {reference.fun:.4f} kg), f1 {f1:.4f} Hz (EB {f1_closed:.4f}), "
        f"δ {1e3 * deflection:.4f} mm (EB {1e3 * delta_closed:.4f}), {result.evaluations} "
        "evaluations"
    )


# --------------------------------------------------------------------------------------------
# bad specifications: clear errors before any work


@pytest.mark.parametrize(
    ("variables", "where", "says"),
    [
        ('\n[variables.elbow]\nmotor = ["DC99-NOPE"]\n', "variables.elbow.motor", "DC22-24V-40W"),
        ("\n[variables.elbow]\nmotor = []\n", "variables.elbow.motor", "non-empty list"),
        (
            '\n[variables.elbow]\nmotor = "catalogue"\nratio = { low = 200.0, high = 10.0 }\n',
            "variables.elbow.ratio",
            "low < high",
        ),
        (
            '\n[variables.elbow]\nmotor = "catalogue"\nratio = [30.0, nan]\n',
            "variables.elbow.ratio",
            "finite",
        ),
        (
            '\n[variables.elbow]\nmotor = "catalogue"\nratio = { low = nan, high = 10.0 }\n',
            "variables.elbow.ratio",
            "finite",
        ),
        ('\n[variables.elbow]\nmotor = "catalogue"\ngears = [3]\n', "variables.elbow", "ratio"),
        (
            '\n[variables.elbw]\nmotor = "catalogue"\n',
            "variables",
            "elbow",
        ),
    ],
)
def test_bad_variables(tmp_path, variables, where, says):
    with pytest.raises(FileFormatError) as err:
        optimize(write_spec(tmp_path, variables=variables))
    assert where in str(err.value) and says in str(err.value)


ELBOW = '\n[variables.elbow]\nmotor = "catalogue"\nratio = [50.0, 100.0]\n'


@pytest.mark.parametrize(
    ("variables", "extra", "where"),
    [
        (ELBOW + "efficiency = nan\n", "", "variables.elbow.efficiency"),
        (ELBOW + "stiffness = nan\ndamping = 1.0\n", "", "variables.elbow.stiffness"),
        (ELBOW + "damping = { low = 0.5, high = nan }\nstiffness = 1e4\n", "", "variables.elbow"),
        (ELBOW, "\n[limits.elbow]\nmax_speed = nan\n", "limits.elbow"),
        (ELBOW, "\n[limits.elbow]\npeak_torque = inf\n", "limits.elbow"),
    ],
)
def test_nan_in_a_specification_is_refused_before_any_work(
    tmp_path, monkeypatch, variables, extra, where
):
    """NaN (or inf) anywhere a number is read: a FileFormatError naming the file and the key,
    raised before the inverse dynamics of the screening runs."""
    import pinext.planning.drive_problem as drive_problem

    def no_work(*args, **kwargs):
        raise AssertionError("the screening ran on a bad specification")

    monkeypatch.setattr(drive_problem, "_joint_side", no_work)
    spec = write_spec(tmp_path, extra, variables=variables)
    with pytest.raises(FileFormatError) as err:
        optimize(spec)
    assert str(spec) in str(err.value) and where in str(err.value)
    assert "finite" in str(err.value) or "positive number" in str(err.value)


def test_nan_weights_and_options_are_refused(tmp_path, arm):
    spec = write_spec(tmp_path, variables=ELBOW)
    text = spec.read_text().replace(
        'minimize = "motor_mass"',
        'minimize = ["motor_mass", "copper_loss"]\nweights = [1.0, nan]',
    )
    spec.write_text(text)
    with pytest.raises(FileFormatError, match=r"objective.*weights must be a finite number"):
        optimize(spec)
    problem = Problem([Continuous("x", 0.0, 1.0)], lambda d: Evaluation({"f": 0.0}, {}), "f")
    for option, value in [("tolerance", math.nan), ("seed", 1.5), ("maxiter", 0)]:
        with pytest.raises(InvalidParameter, match=option):
            optimize(problem, **{option: value})
    drives = DriveProblem(
        arm,
        pick_and_place(),
        {"elbow": {"motor": "catalogue", "ratio": RATIOS}},
        catalogue=load_catalogue(CATALOGUE),
    )
    with pytest.raises(InvalidParameter, match=r"stiffness\['elbow'\] must be a finite number"):
        ElasticTracking(drives, {"elbow": math.nan}, {"elbow": 1.0}, 0.02)
    with pytest.raises(InvalidParameter, match="max_tracking_error must be a finite number > 0"):
        ElasticTracking(drives, {"elbow": 1.0e4}, {"elbow": 1.0}, math.nan)
    with pytest.raises(InvalidParameter, match="the same joints"):
        ElasticTracking(drives, {"elbow": 1.0e4}, {}, 0.02)


def test_bad_objective_and_catalogue(tmp_path):
    spec = write_spec(tmp_path, variables='\n[variables.elbow]\nmotor = "catalogue"\n')
    text = spec.read_text().replace('minimize = "motor_mass"', 'minimize = "moter_mass"')
    spec.write_text(text)
    with pytest.raises(FileFormatError, match="unknown criterion 'moter_mass'.*motor_mass"):
        optimize(spec)
    empty = tmp_path / "empty.toml"
    empty.write_text("# no motors\n")
    spec.write_text(
        text.replace("moter_mass", "motor_mass").replace(
            f"{ROOT}/examples/dc_motors.toml", str(empty)
        )
    )
    with pytest.raises(FileFormatError, match=r"variables.elbow.motor.*catalogue is empty"):
        optimize(spec)
    with pytest.raises(FileFormatError, match=r"limits.elbow"):
        optimize(write_spec(tmp_path, "\n[limits.elbow]\nmax_speed = -3.0\n"))
    with pytest.raises(FileFormatError, match=r"limits.wrist_1.*no motor.*elbow"):
        optimize(
            write_spec(
                tmp_path,
                "\n[limits.wrist_1]\nmax_speed = 3.0\n",
                variables='\n[variables.elbow]\nmotor = "catalogue"\n',
            )
        )


def test_bad_problems():
    with pytest.raises(InvalidParameter, match=r"'x'.*low < high"):
        Continuous("x", 2.0, 1.0)
    with pytest.raises(InvalidParameter, match=r"'x': low must be a finite number"):
        Continuous("x", float("nan"), 1.0)
    with pytest.raises(InvalidParameter, match=r"'m'.*empty"):
        Choice("m", ())
    with pytest.raises(InvalidParameter, match="repeated variable names: x"):
        Problem([Continuous("x", 0, 1), Continuous("x", 0, 2)], lambda d: None, "f")
    with pytest.raises(InvalidParameter, match="weights must be one non-negative number"):
        Problem([Continuous("x", 0, 1)], lambda d: None, ["f", "g"], weights=[1.0])
    with pytest.raises(InvalidParameter, match="Problem or the path"):
        optimize(42)  # type: ignore[arg-type]


def test_infeasible_limits_name_the_closest_constraint(tmp_path):
    """Limits no catalogue motor meets: the error gives the limit closest to being met in the
    least violating design and by how much (−margin of its limit)."""
    spec = write_spec(
        tmp_path,
        "\n[limits.elbow]\nrated_torque = 0.01\npeak_torque = 1.0e3\n",
        variables='\n[variables.elbow]\nmotor = "catalogue"\nratio = [50.0, 100.0, 160.0]\n'
        "efficiency = 0.85\n",
    )
    with pytest.raises(InfeasibleDesign) as err:
        optimize(spec)
    error = err.value
    assert error.violated["elbow: RMS motor torque [N.m]"] < 0  # the impossible limit
    assert error.margin < 0 and error.margin == max(error.violated.values())
    assert error.violated[error.constraint] == error.margin
    assert f"closest to feasible is '{error.constraint}'" in str(error)
    assert f"{100 * -error.margin:.3g} %" in str(error)
    assert error.evaluations == 15 and error.design["elbow.ratio"] in (50.0, 100.0, 160.0)


def test_generic_problem_pareto_and_resume(tmp_path):
    """Two criteria f = x², g = (x − 2)² on x ∈ [−1, 3]: the Pareto set is x ∈ [0, 2] and the
    front g = (√f − 2)²; every point of the ε-constraint front lies on it (to the polish's
    tolerance), sorted by f, covering both ends. A second run with the same store evaluates
    nothing new."""
    calls = []

    def evaluate(design):
        calls.append(design)
        x = design["x"]
        return Evaluation({"f": x**2, "g": (x - 2) ** 2}, {})

    problem = Problem([Continuous("x", -1.0, 3.0)], evaluate, ["f", "g"])
    store = tmp_path / "evaluations.jsonl"
    result = optimize(problem, path=store, maxiter=30, pareto_points=7)
    front = result.pareto
    assert front is not None and len(front) >= 5
    f = np.array([p.criteria["f"] for p in front])
    g = np.array([p.criteria["g"] for p in front])
    assert np.all(np.diff(f) > 0) and np.all(np.diff(g) < 0)
    np.testing.assert_allclose(g, (np.sqrt(f) - 2) ** 2, atol=1e-6)
    assert f[0] < 1e-3 and g[-1] < 1e-3
    first = len(calls)
    again = optimize(problem, path=store, maxiter=30, pareto_points=7)
    assert len(calls) == first  # every evaluation read back
    assert again.design == result.design


def test_verifications_are_stored_and_read_back(tmp_path):
    """With a store, the verification (a simulation, here a counted function that fails the
    best screened design x = 0 and passes the next) is stored as it runs: a second run with
    the same store simulates nothing, and decides the same; the store's lines hold both
    verifications."""
    import json

    runs = []

    def verify(design):
        runs.append(design["x"])
        return {"margin": -1.0 if design["x"] == 0.0 else 0.5}

    problem = Problem(
        [Choice("x", (0.0, 1.0, 2.0, 3.0))],
        lambda d: Evaluation({"f": d["x"] ** 2}, {}),
        "f",
        verify=verify,
    )
    store = tmp_path / "evaluations.jsonl"
    first = optimize(problem, path=store, neighbours=False)
    assert first.design == {"x": 1.0} and first.verifications == 2 and runs == [0.0, 1.0]
    assert first.constraints == {"verify: margin": 0.5}
    again = optimize(problem, path=store, neighbours=False)
    assert runs == [0.0, 1.0]  # nothing simulated again
    assert again.design == first.design and again.constraints == first.constraints
    rows = [json.loads(line) for line in store.read_text().splitlines()]
    assert [r["verify"] for r in rows if "verify" in r] == [{"margin": -1.0}, {"margin": 0.5}]


def test_workers_map_is_used(arm):
    """A map-like ``workers=`` callable evaluates the designs a generation at a time (here
    the builtin map, counted): it receives batches, and no more designs than were evaluated
    (the optimization's and the neighbours')."""
    used = []

    def counting_map(func, items):
        items = list(items)
        used.append(len(items))
        return map(func, items)

    problem = DriveProblem(
        arm,
        pick_and_place(),
        {"elbow": {"motor": "catalogue", "ratio": RATIOS, "efficiency": 0.85}},
        catalogue=load_catalogue(CATALOGUE),
        samples=101,
    )
    result = optimize(problem, workers=counting_map, neighbours=False)
    assert used and min(used) > 1
    assert sum(used) <= result.evaluations
    assert result.design["elbow.motor"] == "DC32-48V-120W"


def test_enumerate_designs_needs_choices():
    problem = Problem([Continuous("x", 0, 1)], lambda d: Evaluation({"f": 0.0}, {}), "f")
    with pytest.raises(InvalidParameter, match="Choice variables only"):
        list(enumerate_designs(problem))
    assert list(itertools.islice(enumerate_designs(Problem(
        [Choice("a", (1, 2)), Choice("b", ("x",))], lambda d: None, "f")), 5)) == [
        {"a": 1, "b": "x"}, {"a": 2, "b": "x"}]  # fmt: skip


def test_cli_optimize(tmp_path, capsys):
    """`pinext optimize SPEC.toml` prints the report, writes the HTML and a design spec."""
    from pinext.cli import main

    spec = write_spec(
        tmp_path,
        variables='\n[variables.elbow]\nmotor = "catalogue"\nratio = [80.0, 160.0]\n'
        "efficiency = 0.85\n",
    )
    spec.write_text(spec.read_text().replace("samples = 401", "samples = 101"))
    code = main(
        [
            "optimize",
            str(spec),
            "--html",
            str(tmp_path / "r.html"),
            "--write-spec",
            str(tmp_path / "chosen.toml"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "elbow.motor" in out and "DC32-48V-120W" in out
    assert (tmp_path / "r.html").exists()
    assert 'catalogue_motor = "DC32-48V-120W"' in (tmp_path / "chosen.toml").read_text()


# --------------------------------------------------------------------------------------------
# cost, harmonic drives, link sections and payload

HARMONIC = ROOT / "examples" / "optimal_drives_harmonic.toml"
#: Test prices: DC26 is cheaper than the lighter DC22, DC52 than the lighter DC40.
PRICES = {"DC22-24V-40W": 150.0, "DC26-24V-70W": 120.0, "DC32-48V-120W": 200.0,
          "DC40-48V-150W": 300.0, "DC52-48V-250W": 280.0}  # fmt: skip


def priced_catalogue(tmp_path: Path, prices: dict[str, float] = PRICES) -> Path:
    """examples/dc_motors.toml with the test's price after each motor's mass (its own prices,
    or none for the motors ``prices`` leaves out)."""
    lines, name = [], None
    for line in CATALOGUE.read_text().splitlines():
        if line.startswith("price = "):
            continue
        lines.append(line)
        if line.startswith("name = "):
            name = line.split('"')[1]
        if line.startswith("mass = ") and name in prices:
            lines.append(f"price = {prices[name]!r}")
    path = tmp_path / "priced_motors.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def front_of(points: list[tuple[float, float]]) -> set[tuple[float, float]]:
    """The non-dominated points (both criteria minimised) of an enumeration."""
    return {p for p in points if not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in points)}


def test_cost_alone_weighted_and_pareto_equal_enumeration(arm, tmp_path):
    """Criterion "cost": the sum of the catalogue prices of the chosen motors and harmonic
    drives. Two joints × five motors × five harmonic-drive sizes (625 designs), enumerated:
    the cheapest design, the least cost + 500/kg × drive mass, and the Pareto front of cost
    against drive mass equal the enumeration's (its front: each non-dominated (cost, mass)
    pair), and the cost is the sum of the prices read from the files."""
    catalogue = load_catalogue(priced_catalogue(tmp_path))
    harmonic = load_harmonic_drives(HARMONIC)
    variables = {j: {"motor": "catalogue", "harmonic_drive": "catalogue"}
                 for j in ("elbow", "wrist_1")}  # fmt: skip

    def problem(minimize, weights=None):
        return DriveProblem(arm, pick_and_place(), variables, catalogue=catalogue,
                            harmonic_drives=harmonic, minimize=minimize, weights=weights,
                            samples=201)  # fmt: skip

    cheapest = problem("cost")
    designs = list(enumerate_designs(cheapest))
    assert len(designs) == 625
    evaluations = [cheapest.evaluate(d) for d in designs]
    feasible = [(d, e) for d, e in zip(designs, evaluations, strict=True) if e.feasible]
    assert 1 < len(feasible) < len(designs)
    for design, evaluation in feasible:  # the criterion against the files' prices
        prices = sum(
            catalogue[design[f"{j}.motor"]].price + harmonic[design[f"{j}.harmonic_drive"]].price
            for j in ("elbow", "wrist_1")
        )
        assert evaluation.criteria["cost"] == pytest.approx(prices, abs=1e-9)

    def best(score):
        values = [score(e.criteria) for _, e in feasible]
        assert sorted(values)[1] - sorted(values)[0] > 1e-9  # a unique optimum
        return feasible[int(np.argmin(values))][0]

    result = optimize(cheapest, seed=2)
    assert result.design == best(lambda c: c["cost"])
    assert result.design["wrist_1.motor"] == "DC26-24V-70W"  # cheaper than the lighter DC22
    weighted = optimize(problem(["cost", "drive_mass"], [1.0, 500.0]), seed=2)
    assert weighted.design == best(lambda c: c["cost"] + 500.0 * c["drive_mass"])
    pareto = optimize(problem(["cost", "drive_mass"]), seed=2, pareto_points=7)
    expected = front_of([(e.criteria["cost"], e.criteria["drive_mass"]) for _, e in feasible])
    found = {(p.criteria["cost"], p.criteria["drive_mass"]) for p in pareto.pareto or []}
    assert found == expected and len(expected) >= 2
    print(
        f"cost: cheapest {result.objective:g} in {result.evaluations} evaluations; front "
        f"{sorted(expected)} in {pareto.evaluations} evaluations (enumeration {len(designs)})"
    )


def test_harmonic_drive_sizes_from_their_rated_torque(arm):
    """A harmonic-drive size per joint from the catalogue, for the least drive mass (motors
    and harmonic drives): each joint gets the smallest size whose rated torque covers the RMS
    joint torque and whose peak torque covers the peak (computed here from Pinocchio's rnea
    on 4001 samples of the motion), the transmission is that size's elastic one, and the
    margins of the gear rows are 1 − RMS/rated. Exhaustive enumeration agrees."""
    import pinocchio as pin

    joints = ("shoulder_pan", "shoulder_lift", "elbow")
    harmonic = load_harmonic_drives(HARMONIC)
    problem = DriveProblem(
        arm, pick_and_place(), {j: {"motor": "catalogue", "harmonic_drive": "catalogue"}
                                for j in joints},
        catalogue=load_catalogue(CATALOGUE), harmonic_drives=harmonic,
        minimize="drive_mass", samples=401,
    )  # fmt: skip
    result = optimize(problem)
    motion = pick_and_place()
    t = np.linspace(0.0, 2.0, 4001)
    data = arm.model.createData()
    tau = np.array([pin.rnea(arm.model, data, *motion(s)) for s in t])
    rms = np.sqrt(np.trapezoid(tau**2, t, axis=0) / 2.0)
    peak = np.abs(tau).max(axis=0)
    sizes = sorted(harmonic.values(), key=lambda h: h.rated_torque)
    for joint in joints:
        k = JOINTS.index(joint)
        smallest = next(h for h in sizes if h.rated_torque >= rms[k] and h.peak_torque >= peak[k])
        assert result.design[f"{joint}.harmonic_drive"] == smallest.name, joint
        assert problem.drives_of(result.design)[joint].transmission == smallest.transmission
        margin = result.constraints[f"{joint}: RMS gear torque [N.m]"]
        assert margin == pytest.approx(1.0 - rms[k] / smallest.rated_torque, abs=1e-4)
    assert [result.design[f"{j}.harmonic_drive"] for j in joints] == [
        "HD14-100", "HD20-100", "HD17-100"]  # fmt: skip
    # the neighbour one size smaller fails its rated torque (the pan's HD14 is the smallest)
    smaller = {n.variable: n for n in result.neighbours}
    for joint in ("shoulder_lift", "elbow"):
        assert not smaller[f"{joint}.harmonic_drive"].feasible
    for joint in joints:  # the screening is separable: enumerate each joint's 25 designs
        group = [v for v in problem.variables if v.name.startswith(f"{joint}.")]
        designs = enumerate_designs(Problem(group, problem.evaluate, "drive_mass"))
        evaluations = [(d, problem.evaluate(d)) for d in designs]
        reference = min(
            (item for item in evaluations if item[1].feasible),
            key=lambda item: item[1].criteria["drive_mass"],
        )[0]
        assert {k: result.design[k] for k in reference} == reference


def test_harmonic_drive_result_reloads(tmp_path):
    """A harmonic drive chosen from a specification (harmonic_drives = FILE) is written as its
    elastic transmission with its ratings as [limits]: `pinext design` reloads it with every
    margin of the optimization, the gear rows included, and the first natural frequency's
    (motors held: the harmonic drive's spring under the elbow, f1 = 21.9 Hz > 20 Hz)."""
    spec = write_spec(
        tmp_path,
        variables='\n[variables.elbow]\nmotor = "catalogue"\nharmonic_drive = "catalogue"\n',
    )
    text = spec.read_text().replace(
        "samples = 401",
        f'samples = 101\nharmonic_drives = "{HARMONIC}"\nmin_natural_frequency = 20.0',
    )
    spec.write_text(text.replace('minimize = "motor_mass"', 'minimize = "drive_mass"'))
    result = optimize(spec, neighbours=False)
    assert result.design["elbow.harmonic_drive"] == "HD17-100"
    written = write_design_spec(result, tmp_path / "elsewhere" / "chosen.toml")
    checked = run_design(written, html=tmp_path / "chosen.html")
    margins = {f"{r.name}: {r.quantity}": r.margin for r in checked.check.rows}
    assert margins.keys() == result.constraints.keys()
    assert "elbow: RMS gear torque [N.m]" in margins
    assert "robot: first natural frequency [Hz]" in margins
    for name, margin in result.constraints.items():
        assert margins[name] == pytest.approx(margin, rel=1e-12, abs=1e-12), name


FLEX_SPEC = """
title = "flexible arm: lightest tube"
robot = "{root}/pinext/robots/flexible_arm.urdf"
samples = 3

[motion]                    # held still: the loads are gravity's
law = "rest_to_rest"
q0 = [0.0]
dq = [0.0]
duration = 1.0

[links.bar]
max_stress = {stress}
max_tip_deflection = {deflection}

[objective]
minimize = "link_mass"
"""
TUBE = """
[variables.bar]
section = "tube"
outer_diameter = { low = 0.02, high = 0.12 }
wall_thickness = { low = 0.0005, high = 0.005 }
density = 7850.0
young_modulus = 2.0e11
sublinks = 20
"""
PAYLOAD = '\n[variables.payload]\nmass = {mass}\nframe = "tip"\n'


def flex_spec(tmp_path: Path, variables: str, stress=5.0e7, deflection=0.01) -> Path:
    path = tmp_path / "flex.toml"
    path.write_text(FLEX_SPEC.format(root=ROOT, stress=stress, deflection=deflection) + variables)
    return path


def cantilever(outer, wall, payload, sections=None):
    """Euler–Bernoulli cantilever of length L under its weight μg and a tip mass m_p: root
    moment μgL²/2 + m_p g L, stress M/W, tip deflection μgL⁴/(8EI) + m_p g L³/(3EI)."""
    g = 9.81
    area, inertia = tube(outer, wall)
    mu = RHO_STEEL * area
    moment = mu * g * LENGTH**2 / 2 + payload * g * LENGTH
    stress = moment / (2 * inertia / outer)
    deflection = (mu * g * LENGTH**4 / 8 + payload * g * LENGTH**3 / 3) / (E_STEEL * inertia)
    return mu * LENGTH, stress, deflection


def test_tube_section_and_payload_from_a_specification(tmp_path):
    """[variables.bar] (a tube: outer diameter, wall, density, E, 20 sublinks) and
    [variables.payload] (1.5 kg at the tip) of the flexible arm held horizontal under gravity:
    at a given section the screening's root stress equals the Euler–Bernoulli cantilever's to
    1e-9 (the sublinks carry the distributed weight exactly) and its tip deflection to 0.2 %
    (the elastic joints integrate the curvature by the midpoint rule, error ∝ 1/ν²); the
    lightest tube that keeps the stress ≤ 50 MPa and the tip deflection ≤ 10 mm is the
    closed-form problem's optimum (SLSQP on the formulas, in millimetres: in metres the
    wall's gradient is 1e5 times the diameter's and the line search can stall) to 1 % in
    mass."""
    from scipy.optimize import minimize

    payload = 1.5
    spec = flex_spec(tmp_path, TUBE + PAYLOAD.format(mass=payload))
    problem = DriveProblem.from_spec(spec)
    assert problem.groups is None and problem.structural == [
        "bar.outer_diameter", "bar.wall_thickness"]  # fmt: skip
    for outer, wall in [(0.04, 0.002), (0.08, 0.001)]:
        evaluation = problem.evaluate({"bar.outer_diameter": outer, "bar.wall_thickness": wall})
        mass, stress, deflection = cantilever(outer, wall, payload)
        assert evaluation.criteria["link_mass"] == pytest.approx(mass, rel=1e-12)
        assert 5.0e7 * (1 - evaluation.margins["bar: peak root stress [Pa]"]) == pytest.approx(
            stress, rel=1e-9
        )
        model = 0.01 * (1 - evaluation.margins["bar: peak tip deflection [m]"])
        assert model == pytest.approx(deflection, rel=2e-3)
    result = optimize(problem, seed=3, maxiter=15, popsize=6)
    assert result.feasible
    outer, wall = result.design["bar.outer_diameter"], result.design["bar.wall_thickness"]

    def closed(x_mm, k):
        return cantilever(*(1e-3 * np.asarray(x_mm)), payload)[k]

    reference = minimize(
        lambda x: closed(x, 0), [60.0, 3.0], method="SLSQP",
        bounds=[(20.0, 120.0), (0.5, 5.0)],
        constraints=[{"type": "ineq", "fun": lambda x: 1 - closed(x, 1) / 5.0e7},
                     {"type": "ineq", "fun": lambda x: 1 - closed(x, 2) / 0.01}],
    )  # fmt: skip
    assert reference.success
    assert result.objective == pytest.approx(reference.fun, rel=1e-2)
    _, stress, deflection = cantilever(outer, wall, payload)
    assert stress <= 5.0e7 * (1 + 1e-6) and deflection <= 0.01 * (1 + 3e-3)
    print(
        f"tube with a {payload} kg payload: D = {1e3 * outer:.2f} mm, t = {1e3 * wall:.3f} mm, "
        f"mass {result.objective:.4f} kg (closed form {reference.fun:.4f} kg), σ "
        f"{stress / 1e6:.2f} MPa, δ {1e3 * deflection:.3f} mm, {result.evaluations} evaluations"
    )


def test_rectangular_section_properties():
    """A rectangle b × h: A = bh, I₁ = hb³/12 about the first bending axis (b normal to it),
    I₂ = bh³/12, W = I/(half the side); a thick-walled tube's wall taken at most its radius."""
    from pinext.planning import section_properties

    p = section_properties("rectangle", {"width": 0.02, "height": 0.05})
    assert p["area"] == pytest.approx(1e-3)
    assert p["second_moments"] == pytest.approx((0.05 * 0.02**3 / 12, 0.02 * 0.05**3 / 12))
    assert p["section_moduli"] == pytest.approx((0.05 * 0.02**2 / 6, 0.02 * 0.05**2 / 6))
    rod = section_properties("tube", {"outer_diameter": 0.02, "wall_thickness": 0.5})
    assert rod["area"] == pytest.approx(math.pi * 0.01**2)


def test_rectangular_bar_bends_about_its_weak_axis(tmp_path):
    """The flexible arm's bar as a 10 mm wide, 40 mm high steel rectangle under gravity: the
    vertical bending uses I₂ = b h³/12 (the height along gravity) and W₂ = b h²/6; stress and
    tip deflection against the Euler–Bernoulli cantilever."""
    spec = flex_spec(
        tmp_path,
        '\n[variables.bar]\nsection = "rectangle"\nwidth = 0.01\nheight = [0.03, 0.04]\n'
        "density = 7850.0\nyoung_modulus = 2.0e11\nsublinks = 20\n",
    )
    problem = DriveProblem.from_spec(spec)
    evaluation = problem.evaluate({"bar.height": 0.04})
    b, h, g = 0.01, 0.04, 9.81
    mu = RHO_STEEL * b * h
    stress = mu * g * LENGTH**2 / 2 / (b * h**2 / 6)
    deflection = mu * g * LENGTH**4 / (8 * E_STEEL * b * h**3 / 12)
    assert 5.0e7 * (1 - evaluation.margins["bar: peak root stress [Pa]"]) == pytest.approx(
        stress, rel=1e-9
    )
    model = 0.01 * (1 - evaluation.margins["bar: peak tip deflection [m]"])
    assert model == pytest.approx(deflection, rel=2e-3)


def test_payload_on_a_vertical_lift(tmp_path):
    """A payload m_p at the load's frame of a vertical lift: the joint force is
    (m + m_p)(ẍ + g) at every sample; with the payload a choice and the motors priced, the
    Pareto front of cost against −payload equals the enumeration's (each payload with the
    cheapest motor that lifts it)."""
    robot = one_joint(tmp_path, "prismatic", 1.0, 0.1)
    variables = {
        "axis": {"motor": "catalogue", "ratio": 1000.0},
        "payload": {"mass": [0.5, 1.0, 2.0, 4.0, 8.0], "frame": "load"},
    }
    problem = DriveProblem(
        robot, RestToRest([0.0], [0.2], 1.0), variables,
        catalogue=load_catalogue(priced_catalogue(tmp_path)),
        minimize=["cost", "negative_payload"], samples=201,
    )  # fmt: skip
    assert problem.groups is None
    report = problem.report_of({"axis.motor": "DC22-24V-40W", "payload.mass": 2.0})
    motion = RestToRest([0.0], [0.2], 1.0)
    acceleration = np.array([motion(t)[2][0] for t in report.t])
    np.testing.assert_allclose(report.torque[:, 0], 3.0 * (acceleration + 9.81), rtol=1e-12)
    assert problem.robot.model.inertias[1].mass == 1.0  # the robot itself is unchanged
    result = optimize(problem, pareto_points=5)
    points = [
        (e.criteria["cost"], e.criteria["negative_payload"])
        for d in enumerate_designs(problem)
        if (e := problem.evaluate(d)).feasible
    ]
    found = {(p.criteria["cost"], p.criteria["negative_payload"]) for p in result.pareto or []}
    assert found == front_of(points) and len(found) >= 2


@pytest.mark.parametrize(
    ("variables", "where", "says"),
    [
        (TUBE.replace("low = 0.02, high = 0.12", "low = 0.12, high = 0.02"),
         "variables.bar", "low < high"),
        (TUBE.replace("7850.0", "nan"), "variables.bar.density", "finite"),
        (TUBE.replace('"tube"', '"hexagon"'), "variables.bar.section", "tube, rectangle"),
        (TUBE.replace("density", "densty"), "variables.bar", "densty"),
        (TUBE.replace("low = 0.0005, high = 0.005", "low = 0.07, high = 0.08"),
         "variables.bar.wall_thickness", "thinner than the radius"),
        (TUBE + PAYLOAD.format(mass="-1.0"), "variables.payload.mass", ">= 0"),
        (TUBE + PAYLOAD.format(mass="nan"), "variables.payload.mass", "finite"),
        (TUBE + PAYLOAD.format(mass="1.0").replace('"tip"', '"tap"'),
         "variables.payload.frame", "tip"),
        ('\n[variables.bra]\nsection = "tube"\n', "variables", "bar"),
    ],
)  # fmt: skip
def test_bad_sections_and_payloads(tmp_path, monkeypatch, variables, where, says):
    """A bad [variables.LINK] or [variables.payload] table: a FileFormatError naming the file
    and the key, before any screening."""
    import pinext.planning.drive_problem as drive_problem

    def no_work(*args, **kwargs):
        raise AssertionError("the screening ran on a bad specification")

    monkeypatch.setattr(drive_problem, "_joint_side", no_work)
    spec = flex_spec(tmp_path, variables)
    with pytest.raises(FileFormatError) as err:
        optimize(spec)
    assert str(spec) in str(err.value) and where in str(err.value) and says in str(err.value)


def test_bad_prices_and_harmonic_drives(tmp_path, arm):
    """Missing prices for the criterion "cost" (named entry by entry), a NaN price, unknown or
    conflicting harmonic drives, a bad harmonic-drive catalogue: clear errors naming the key."""
    elbow = '\n[variables.elbow]\nmotor = "catalogue"\nharmonic_drive = "catalogue"\n'
    spec = write_spec(tmp_path, variables=elbow)
    text = spec.read_text().replace(
        "samples = 401", f'samples = 101\nharmonic_drives = "{HARMONIC}"'
    )
    no_prices = priced_catalogue(tmp_path, {}).rename(tmp_path / "no_prices.toml")
    text = text.replace(str(CATALOGUE), str(no_prices))
    spec.write_text(text.replace('minimize = "motor_mass"', 'minimize = "cost"'))
    with pytest.raises(FileFormatError, match=r"catalogue.*'cost'.*without a price: DC22-24V-40W"):
        optimize(spec)
    with pytest.raises(InvalidParameter, match=r"^catalogue: .*DC40-48V-150W"):
        DriveProblem(arm, pick_and_place(), {"elbow": {"motor": "catalogue"}},
                     catalogue=load_catalogue(no_prices), minimize="cost")  # fmt: skip
    unpriced = tmp_path / "unpriced.toml"
    lines = HARMONIC.read_text().splitlines()
    unpriced.write_text("\n".join(line for line in lines if not line.startswith("price")))
    with pytest.raises(InvalidParameter, match=r"^harmonic_drives: .*without a price: HD14-100"):
        DriveProblem(arm, pick_and_place(), {"elbow": {"harmonic_drive": "catalogue",
                     "motor": "catalogue"}}, catalogue=load_catalogue(priced_catalogue(tmp_path)),
                     harmonic_drives=load_harmonic_drives(unpriced), minimize="cost")  # fmt: skip
    nan_price = tmp_path / "nan_price.toml"
    nan_price.write_text(
        priced_catalogue(tmp_path).read_text().replace("price = 120.0", "price = nan")
    )
    with pytest.raises(FileFormatError, match=r"motor\[1\].*price must be .*a finite number >= 0"):
        load_catalogue(nan_price)
    bad = tmp_path / "bad_hd.toml"
    bad.write_text(HARMONIC.read_text().replace("stiffness = 1.3e4", "stiffness = nan"))
    with pytest.raises(FileFormatError, match=r"harmonic_drive\[1\].*stiffness must be a finite"):
        load_harmonic_drives(bad)
    bad.write_text("# nothing\n")
    with pytest.raises(FileFormatError, match=r"no \[\[harmonic_drive\]\] table"):
        load_harmonic_drives(bad)
    cases = [
        ('harmonic_drive = ["HD99-100"]', "variables.elbow.harmonic_drive", "HD14-100"),
        ('harmonic_drive = "catalogue"\nratio = [50.0]', "variables.elbow", "harmonic_drive alone"),
    ]
    for line, where, says in cases:
        spec = write_spec(tmp_path, variables=f'\n[variables.elbow]\nmotor = "catalogue"\n{line}\n')
        spec.write_text(
            spec.read_text().replace("samples = 401", f'harmonic_drives = "{HARMONIC}"')
        )
        with pytest.raises(FileFormatError) as err:
            optimize(spec)
        assert where in str(err.value) and says in str(err.value)
    with pytest.raises(
        FileFormatError, match=r"variables.elbow.harmonic_drive.*catalogue is empty"
    ):
        optimize(write_spec(tmp_path, variables=elbow))


def test_sections_and_payload_in_python(tmp_path):
    """The same tables in Python: bad values raise InvalidParameter naming the key; a tube
    whose wall is thicker than its radius in one design is a violated constraint (margin
    1 − 2t/D), screened on the solid rod; a robot that was not loaded from a URDF file cannot
    have its section varied."""
    robot = px.load_urdf(px.robot_path("flexible_arm"))
    tube = {"section": "tube", "outer_diameter": {"low": 0.02, "high": 0.06},
            "wall_thickness": {"low": 0.001, "high": 0.02}, "density": 7850.0}  # fmt: skip
    motion = RestToRest([0.0], [0.0], 1.0)
    limits = {"bar": px.planning.LinkLimits(max_stress=5.0e7)}
    problem = DriveProblem(robot, motion, {"bar": tube}, link_limits=limits, samples=3,
                           minimize="link_mass")  # fmt: skip
    thick = problem.evaluate({"bar.outer_diameter": 0.03, "bar.wall_thickness": 0.02})
    rod = problem.evaluate({"bar.outer_diameter": 0.03, "bar.wall_thickness": 0.015})
    assert thick.margins["bar: wall thickness [m]"] == pytest.approx(1 - 0.04 / 0.03)
    assert rod.margins["bar: wall thickness [m]"] == pytest.approx(0.0, abs=1e-15)
    assert thick.criteria["link_mass"] == pytest.approx(rod.criteria["link_mass"], rel=1e-12)
    assert not thick.feasible and rod.feasible
    cases = [
        ({"bar": {**tube, "density": math.nan}}, "variables.bar.density"),
        ({"bar": {**tube, "outer_diameter": {"low": 0.06, "high": 0.02}}}, "low < high"),
        ({"bar": {**tube, "wall_thickness": [0.001, -0.002]}}, "variables.bar.wall_thickness"),
        ({"payload": {"mass": math.inf, "frame": "tip"}}, "variables.payload.mass"),
        ({"payload": {"mass": 1.0}}, "variables.payload needs exactly mass"),
    ]
    for variables, says in cases:
        with pytest.raises(InvalidParameter) as err:
            DriveProblem(robot, motion, variables, samples=3)
        assert says in str(err.value)
    bare = px.Robot.from_model(robot.model)
    bare.flexible = robot.flexible
    with pytest.raises(InvalidParameter, match="variables.bar: .*URDF file"):
        DriveProblem(bare, motion, {"bar": tube}, samples=3)


# --------------------------------------------------------------------------------------------
# the first natural frequency as a limit; the chosen sections written back


def frequency_spec(tmp_path: Path, variables: str, limit: str = "12.0") -> Path:
    """The flexible arm held still, loose stress and deflection limits, a lower limit on the
    first natural frequency."""
    path = flex_spec(tmp_path, variables, stress=1.0e12, deflection=10.0)
    text = path.read_text().replace(
        "samples = 3\n", f"samples = 3\nmin_natural_frequency = {limit}\n"
    )
    path.write_text(text)
    return path


def cantilever_frequency(outer: float, wall: float) -> float:
    """Euler–Bernoulli first bending frequency [Hz] of the steel tube clamped at the locked
    hub: f1 = (1.875104²/2π) √(EI/(ρA L⁴))."""
    area, inertia = tube(outer, wall)
    return (
        1.875104**2 / (2 * math.pi) * math.sqrt(E_STEEL * inertia / (RHO_STEEL * area * LENGTH**4))
    )


def test_min_natural_frequency_lightest_tube(tmp_path):
    """`min_natural_frequency = 12.0` [Hz]: the lightest steel tube of the flexible arm's 2 m
    bar whose first natural frequency (hub locked: a cantilever) is at least 12 Hz.

    For a tube √(I/A) = √(D² + d²)/4: at a given f1 the mass ∝ D² − d² falls as the wall
    thins, so the wall goes to its lower bound (0.5 mm) and D falls until f1 binds. The
    sublink model (ν = 20, Celentano (2008) §5) is stiffer than Euler–Bernoulli by
    0.2296/ν² (measured at ν = 5, 10, 20, 40 for two sections: 0.925 %, 0.230 %, 0.0574 %,
    0.0143 %), so the found section's closed-form f1 lies within 0.25/ν² = 0.0625 % below
    the limit, and its D within the same of the closed-form optimum (f1 ∝ D for a thin
    wall). The limit binds: margin ≈ 0, a 0.1 % smaller D fails it."""
    from scipy.optimize import brentq

    f_min, nu = 12.0, 20
    spec = frequency_spec(tmp_path, TUBE)
    problem = DriveProblem.from_spec(spec)
    assert problem.min_natural_frequency == f_min
    result = optimize(problem, seed=3, maxiter=15, popsize=6)
    name = "robot: first natural frequency [Hz]"
    outer, wall = result.design["bar.outer_diameter"], result.design["bar.wall_thickness"]
    assert result.feasible and name in result.binding(0.01)
    assert result.constraints[name] == pytest.approx(0.0, abs=1e-6)
    assert wall == pytest.approx(0.0005, rel=1e-6)
    closed = cantilever_frequency(outer, wall)
    assert f_min * (1 - 0.25 / nu**2) <= closed <= f_min * (1 + 1e-6)
    optimum = brentq(lambda d: cantilever_frequency(d, 0.0005) - f_min, 0.02, 0.12, xtol=1e-12)
    assert outer == pytest.approx(optimum, rel=0.25 / nu**2)
    assert outer < optimum  # the model is the stiffer
    smaller = problem.evaluate({"bar.outer_diameter": outer * 0.999, "bar.wall_thickness": wall})
    assert smaller.margins[name] < 0 and not smaller.feasible
    thinner = problem.evaluate({"bar.outer_diameter": outer, "bar.wall_thickness": wall * 0.9})
    assert thinner.margins[name] > 0  # a thinner wall at the same D raises f1
    print(
        f"f1 >= {f_min} Hz: D = {1e3 * outer:.4f} mm (closed-form optimum {1e3 * optimum:.4f} "
        f"mm), t = {1e3 * wall:.3f} mm, mass {result.objective:.4f} kg, margin "
        f"{result.constraints[name]:.2e}, EB f1 at the section {closed:.5f} Hz, 0.1 % smaller "
        f"D: margin {smaller.margins[name]:.2e}, {result.evaluations} evaluations"
    )


def test_sections_and_payload_written_back(tmp_path):
    """write_design_spec writes the chosen tube into [links.bar] (section, D, t, ρ, E,
    sublinks) and the chosen payload into [payload]: `pinext design` (read_design) rebuilds
    the same flexible link (E I, μ and section modulus equal to the optimum's, bit for bit),
    the same payload, and run_design gives every margin of the optimization to 1e-12, the
    first natural frequency's included."""
    from pinext.planning import read_design

    variables = TUBE + PAYLOAD.format(mass="[0.5, 1.0]")
    spec = frequency_spec(tmp_path, variables)
    spec.write_text(
        spec.read_text().replace("max_tip_deflection = 10.0", "max_tip_deflection = 0.01")
    )
    result = optimize(spec, seed=1, maxiter=8, popsize=5)
    problem = result.problem
    written = write_design_spec(result, tmp_path / "elsewhere" / "chosen.toml")
    text = written.read_text()
    assert "[links.bar]" in text and "[payload]" in text and "section_modulus" not in text
    reloaded = read_design(written)
    link = next(s for s in reloaded.robot.flexible if s.link == "bar")
    chosen = problem.sections["bar"].flexible(result.design)
    assert link == chosen
    assert reloaded.section_modulus["bar"] == problem.sections["bar"].section_modulus(result.design)
    assert reloaded.min_natural_frequency == 12.0
    optimum = problem.robot_of(result.design)
    for mine, theirs in ((reloaded.robot.model, optimum.model),
                         (reloaded.robot.rigid_model, optimum.rigid_model)):  # fmt: skip
        for a, b in zip(mine.inertias, theirs.inertias, strict=True):
            np.testing.assert_array_equal(a.toDynamicParameters(), b.toDynamicParameters())
    checked = run_design(written, html=tmp_path / "chosen.html")
    margins = {f"{r.name}: {r.quantity}": r.margin for r in checked.check.rows}
    expected = {k: m for k, m in result.constraints.items() if k != "bar: wall thickness [m]"}
    assert margins.keys() == expected.keys()
    for name, margin in expected.items():
        assert margins[name] == pytest.approx(margin, rel=1e-12, abs=1e-12), name
    print(f"written back: {result.design}, margins {margins}")


@pytest.mark.parametrize(
    ("text", "where", "says"),
    [
        ("min_natural_frequency = nan", "min_natural_frequency", "finite"),
        ("min_natural_frequency = -3.0", "min_natural_frequency", "> 0"),
        ("min_natural_frequency = 0.0", "min_natural_frequency", "> 0"),
        ('min_natural_frequency = "high"', "min_natural_frequency", "number"),
        ("min_natural_frequencies = 3.0", "top level", "min_natural_frequency"),
    ],
)
def test_bad_min_natural_frequency(tmp_path, text, where, says):
    """A bad `min_natural_frequency`: a FileFormatError naming the file and the key, from
    `pinext optimize` and `pinext design` alike; in Python an InvalidParameter, and a robot
    without a flexible link is refused (with its joints held it has no vibration mode)."""
    spec = frequency_spec(tmp_path, TUBE)
    spec.write_text(spec.read_text().replace("min_natural_frequency = 12.0", text))
    design = tmp_path / "design.toml"  # the same without [variables] and [objective]
    design.write_text(spec.read_text().split("[objective]")[0])
    for run, path in ((optimize, spec), (run_design, design)):
        with pytest.raises(FileFormatError) as err:
            run(path)
        spec = path
        assert str(spec) in str(err.value) and where in str(err.value), str(err.value)
        assert says in str(err.value), str(err.value)


def test_bad_min_natural_frequency_in_python(arm):
    robot = px.load_urdf(px.robot_path("flexible_arm"))
    motion = RestToRest([0.0], [0.0], 1.0)
    tube_table = {"section": "tube", "outer_diameter": 0.05, "wall_thickness": [0.001, 0.002],
                  "density": 7850.0}  # fmt: skip
    for bad in (math.nan, -1.0, math.inf):
        with pytest.raises(InvalidParameter, match="min_natural_frequency"):
            DriveProblem(robot, motion, {"bar": tube_table}, min_natural_frequency=bad)
    with pytest.raises(InvalidParameter, match="min_natural_frequency: needs a flexible link"):
        DriveProblem(arm, pick_and_place(), {"elbow": {"motor": "catalogue"}},
                     catalogue=load_catalogue(CATALOGUE), min_natural_frequency=5.0)  # fmt: skip
    from pinext.planning.natural_frequency import first_natural_frequency

    with pytest.raises(InvalidParameter, match="no vibration mode"):
        first_natural_frequency(arm)


@pytest.mark.parametrize(
    ("table", "where", "says"),
    [
        ('[links.bar]\nsection = "tube"\nouter_diameter = 0.05\nwall_thickness = 0.001\n'
         "density = nan\n", "links.bar.density", "finite"),
        ('[links.bar]\nsection = "tube"\nouter_diameter = [0.05, 0.06]\nwall_thickness = 0.001\n'
         "density = 7850.0\n", "links.bar", "ranges and lists"),
        ('[links.bar]\nsection = "tube"\nouter_diameter = 0.05\nwall_thickness = 0.001\n'
         "density = 7850.0\nsection_modulus = 1e-6\n", "links.bar", "not both"),
        ('[links.bra]\nsection = "tube"\nouter_diameter = 0.05\nwall_thickness = 0.001\n'
         "density = 7850.0\n", "links.bra", "bar"),
        ('[links.bar]\nsection = "tube"\nouter_diameter = 0.05\nwall_thickness = 0.03\n'
         "density = 7850.0\n", "links.bar.wall_thickness", "thinner than the radius"),
        ('[payload]\nmass = -1.0\nframe = "tip"\n', "payload", ">= 0"),
        ('[payload]\nmass = 1.0\nframe = "tap"\n', "payload", "tip"),
        ('[payload]\nmass = [1.0, 2.0]\nframe = "tip"\n', "payload", "ranges and lists"),
    ],
)  # fmt: skip
def test_bad_sections_and_payload_of_a_design(tmp_path, table, where, says):
    """A `pinext design` specification's [links.LINK] section and [payload]: bad values are a
    FileFormatError naming the file and the key."""
    path = tmp_path / "design.toml"
    body = FLEX_SPEC.format(root=ROOT, stress=5.0e7, deflection=0.01).split("[links.bar]")[0]
    path.write_text(body + table)
    with pytest.raises(FileFormatError) as err:
        run_design(path)
    assert str(path) in str(err.value) and where in str(err.value), str(err.value)
    assert says in str(err.value), str(err.value)


def test_fixed_payload_of_an_optimize_specification(tmp_path):
    """A top-level [payload] in a `pinext optimize` specification is the fixed payload of
    every design (as [variables.payload] with one mass); both at once are refused."""
    spec = frequency_spec(tmp_path, TUBE)
    text = spec.read_text().replace(
        "[objective]", '[payload]\nmass = 1.5\nframe = "tip"\n\n[objective]'
    )
    spec.write_text(text)
    fixed = DriveProblem.from_spec(spec)
    assert fixed.payload is not None and fixed.payload.mass_of({}) == 1.5
    spec.write_text(text + PAYLOAD.format(mass="2.0"))
    with pytest.raises(FileFormatError, match=r"payload.*not both"):
        DriveProblem.from_spec(spec)


VERIFIED = """title = "one joint, verified by simulation"
robot = "revolute.urdf"
extensions = false
catalogue = "{catalogue}"
samples = 201

[motion]
law = "rest_to_rest"
q0 = [0.0]
dq = [0.3]
duration = 0.5

[objective]
minimize = "motor_mass"

[variables.axis]
motor = "catalogue"
ratio = [50.0, 100.0]
{verify}"""
VERIFY = """
[verify]
max_tracking_error = 0.02
settle = 0.1

[verify.stiffness]
axis = 2.0e4

[verify.damping]
axis = 10.0
"""


def verified_spec(tmp_path: Path, verify: str = VERIFY) -> Path:
    one_joint(tmp_path, "revolute", 1.0, 0.5)
    spec = tmp_path / "verified.toml"
    spec.write_text(VERIFIED.format(catalogue=CATALOGUE, verify=verify))
    return spec


def test_a_verify_table_simulates_the_chosen_design_with_playback(tmp_path):
    """A specification's [verify] table (as `pinext optimize` reads it) simulates the best
    screened design with the elastic transmission of [verify.stiffness] and
    [verify.damping] under feedforward + motor PD: its margins join the result
    (`verify: ...`), the report links the run's 3-D playback (a self-contained HTML animation
    next to it, from the run kept by the verification: no second simulation), and the written
    specification, without [verify], reloads in `pinext design` and passes. The simulated
    motor's RMS torque (C_M i of the run) agrees with the screening's inverse dynamics to
    0.5 % of the rating: the transmission is stiff (√(c/J_L)/2π = 32 Hz for a 0.5 s move)."""
    result = optimize(verified_spec(tmp_path), neighbours=False)
    assert result.feasible and result.verifications == 1
    assert result.constraints["verify: axis: peak tracking error [rad]"] > 0
    rms = "axis: RMS motor torque [N.m]"
    assert result.constraints[f"verify: {rms}"] == pytest.approx(result.constraints[rms], abs=0.005)
    html = write_optimize_html(result, tmp_path / "out" / "r.html", playback=export_html)
    playback = tmp_path / "out" / "r_playback.html"
    assert playback.exists() and 'href="r_playback.html"' in html.read_text()
    assert "meshcat" in playback.read_text()
    written = write_design_spec(result, tmp_path / "out" / "chosen.toml")
    assert "verify" not in written.read_text()
    assert run_design(written, html=tmp_path / "chosen.html").check.passed
    simulated, screened = result.constraints[f"verify: {rms}"], result.constraints[rms]
    print(f"verified: {result.design}, RMS torque margin {simulated:.4f} (screened {screened:.4f})")


@pytest.mark.parametrize(
    ("verify", "says"),
    [
        ("\n[verify]\nmax_tracking_error = 0.02\nkpp = 1.0\n[verify.stiffness]\naxis = 1e4\n"
         "[verify.damping]\naxis = 1.0\n", "unknown keys ['kpp']"),
        ("\n[verify]\nmax_tracking_error = 0.02\n[verify.stiffness]\nelbow = 1e4\n"
         "[verify.damping]\nelbow = 1.0\n", "joint 'elbow'"),
        ("\n[verify]\n[verify.stiffness]\naxis = 1e4\n[verify.damping]\naxis = 1.0\n",
         "max_tracking_error"),
        ("\n[verify]\nmax_tracking_error = nan\n[verify.stiffness]\naxis = 1e4\n"
         "[verify.damping]\naxis = 1.0\n", "finite"),
        ("\n[verify]\nmax_tracking_error = 0.02\n[verify.stiffness]\naxis = -1e4\n"
         "[verify.damping]\naxis = 1.0\n", "stiffness"),
        ("\n[verify]\nmax_tracking_error = 0.02\nstiffness = 1e4\n", "[verify.stiffness]"),
    ],
)  # fmt: skip
def test_bad_verify_tables(tmp_path, verify, says):
    """A bad [verify] table: a FileFormatError naming the file and [verify], before any
    evaluation."""
    spec = verified_spec(tmp_path, verify)
    with pytest.raises(FileFormatError) as err:
        DriveProblem.from_spec(spec)
    assert str(spec) in str(err.value) and "verify" in str(err.value), str(err.value)
    assert says in str(err.value), str(err.value)
