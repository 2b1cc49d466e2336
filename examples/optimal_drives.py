"""Optimal drives of the six_dof_arm for pick and place, inertia matching, a Pareto front,
harmonic-drive sizes (by torque, then stiff enough for a first natural frequency), and the
lightest tube section of the flexible arm with a payload."""

from __future__ import annotations

import math
from pathlib import Path

import pinext as px
from pinext.planning import (
    DriveProblem,
    LinkLimits,
    RestToRest,
    first_natural_frequency,
    load_harmonic_drives,
    optimize,
    write_design_spec,
    write_optimize_html,
)

HERE = Path(__file__).resolve().parent
SPEC = HERE / "optimal_drives.toml"
HARMONIC = HERE / "optimal_drives_harmonic.toml"


def lightest_drives(out: Path) -> None:
    """The catalogue motors and standard ratios of least total mass (optimal_drives.toml)."""
    result = optimize(SPEC)
    print(result.table())
    print(f"\nwrote {write_optimize_html(result, out / 'optimal_drives.html')}")
    print(f"wrote {write_design_spec(result, out / 'optimal_drives_design.toml')}")


def inertia_matching() -> None:
    """One ratio, continuous: the peak motor torque of a rotor J_m turning a load J_L is least
    at N* = √(J_L/J_m) (bounded Brent)."""
    robot = px.load_urdf(px.robot_path("flexible_arm"), extensions=False)  # its rigid bar
    j_load = float(robot.model.inertias[1].inertia[2, 2] + robot.model.inertias[1].mass * 1.0)
    rotor = px.DCMotor(
        resistance=0.6, torque_constant=0.06, back_emf_constant=0.06, rotor_inertia=1.42e-5
    )
    problem = DriveProblem(
        robot,
        RestToRest([0.0], [1.0], 1.5),
        {"hub": {"ratio": {"low": 5.0, "high": 1000.0}}},
        drives={"hub": px.Drive(rotor, px.Gear(1.0))},
        minimize="peak_motor_torque",
        gravity=False,
    )
    result = optimize(problem)
    print(
        f"\ninertia matching: N = {result.design['hub.ratio']:.3f} after {result.evaluations} "
        f"evaluations; √(J_L/J_m) = {math.sqrt(j_load / rotor.rotor_inertia):.3f}"
    )


def pareto(out: Path) -> None:
    """Motor mass against copper losses of the shoulder and elbow drives: an ε-constraint
    front of differential evolution runs."""
    import matplotlib

    matplotlib.use("Agg")
    from pinext.planning.optimize_report import pareto_figure

    base = DriveProblem.from_spec(SPEC)
    joints = ("shoulder_lift", "elbow")
    variables = {
        j: {"motor": "catalogue", "ratio": [30.0, 50.0, 80.0, 100.0, 120.0, 160.0]} for j in joints
    }
    problem = DriveProblem(
        base.robot,
        base.motion,
        variables,
        catalogue=base.catalogue,
        limits={"shoulder_lift": {"max_winding_temperature": 100.0}},
        minimize=["motor_mass", "copper_loss"],
        samples=201,
    )
    result = optimize(problem, pareto_points=7, maxiter=40)
    print("\nPareto front (motor mass [kg], copper losses per cycle [J]):")
    for point in result.pareto or []:
        print(f"  {point.criteria['motor_mass']:.2f}  {point.criteria['copper_loss']:8.3f}")
    figure = pareto_figure(result)
    figure.savefig(out / "optimal_drives_pareto.png", dpi=110)
    print(f"wrote {out / 'optimal_drives_pareto.png'}")


def harmonic_drives() -> None:
    """A harmonic-drive size (ratio, torsional stiffness, damping from the catalogue) and a
    motor for the shoulder and elbow, for the least mass of motors and harmonic drives: each
    size's rated torque bounds the RMS joint torque."""
    base = DriveProblem.from_spec(SPEC)
    joints = ("shoulder_lift", "elbow")
    problem = DriveProblem(
        base.robot,
        base.motion,
        problem_variables(joints),
        catalogue=base.catalogue,
        harmonic_drives=load_harmonic_drives(HARMONIC),
        minimize="drive_mass",
        samples=201,
    )
    result = optimize(problem)
    print("\nharmonic drives:")
    for joint in joints:
        size = result.design[f"{joint}.harmonic_drive"]
        margin = result.constraints[f"{joint}: RMS gear torque [N.m]"]
        print(f"  {joint}: {size} with {result.design[f'{joint}.motor']} (rated torque margin "
              f"{100 * margin:.1f} %)")  # fmt: skip
    # the harmonic drives' springs set the first natural frequency (motors held, the other
    # joints locked): a limit above the torques' choice asks for stiffer sizes
    f1 = first_natural_frequency(problem.robot, problem.motion,
                                 drives=problem.drives_of(result.design))  # fmt: skip
    stiff = DriveProblem(problem.robot, problem.motion, problem_variables(joints),
                         catalogue=base.catalogue, harmonic_drives=problem.harmonic_drives,
                         minimize="drive_mass", samples=201,
                         min_natural_frequency=15.0)  # fmt: skip
    chosen = optimize(stiff)
    sizes = ", ".join(chosen.design[f"{j}.harmonic_drive"] for j in joints)
    margin = chosen.constraints["robot: first natural frequency [Hz]"]
    print(f"  f1 >= 15 Hz (the sizes above give {f1:.1f} Hz): {sizes}, f1 margin "
          f"{100 * margin:.1f} %, drive mass {chosen.objective:.2f} kg")  # fmt: skip


def problem_variables(joints: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """A catalogue motor and a harmonic-drive size for each of ``joints``."""
    return {j: {"motor": "catalogue", "harmonic_drive": "catalogue"} for j in joints}


def tube_section() -> None:
    """The lightest steel tube for the flexible arm's 2 m bar held horizontal with a 1.5 kg
    payload at its tip: root stress ≤ 50 MPa and tip deflection ≤ 10 mm (Euler–Bernoulli
    beam of 20 sublinks)."""
    robot = px.load_urdf(px.robot_path("flexible_arm"))
    tube = {
        "section": "tube",
        "outer_diameter": {"low": 0.02, "high": 0.12},
        "wall_thickness": {"low": 0.0005, "high": 0.005},
        "density": 7850.0,
        "young_modulus": 2.0e11,
        "sublinks": 20,
    }
    problem = DriveProblem(
        robot,
        RestToRest([0.0], [0.0], 1.0),  # held still: gravity's loads
        {"bar": tube, "payload": {"mass": 1.5, "frame": "tip"}},
        link_limits={"bar": LinkLimits(max_stress=5.0e7, max_tip_deflection=0.01)},
        minimize="link_mass",
        samples=3,
    )
    result = optimize(problem, seed=3, maxiter=15, popsize=6)
    outer, wall = result.design["bar.outer_diameter"], result.design["bar.wall_thickness"]
    print(
        f"\ntube: D = {1e3 * outer:.1f} mm, t = {1e3 * wall:.2f} mm, {result.objective:.3f} kg; "
        f"binding: {', '.join(result.binding(0.01))}"
    )


def main() -> None:
    out = Path("out")
    out.mkdir(exist_ok=True)
    lightest_drives(out)
    inertia_matching()
    pareto(out)
    harmonic_drives()
    tube_section()


if __name__ == "__main__":
    main()
