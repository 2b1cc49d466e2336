"""The flexible arm on an elastic DC drive as a linear model: poles, resonances, Bode plot, a PD."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import pinext as px
from pinext.drives import DCMotor, Drive, ElasticTransmission

RATIO = 50.0  # gear reduction N [-]


def build() -> px.System:
    """The flexible arm (five sublinks, horizontal plane) driven at its hub through an elastic
    transmission by a DC motor (Vukobratović & Potkonjak (20.62)–(20.67), (20.98)–(20.99))."""
    robot = px.load_urdf(px.robot_path("flexible_arm"))
    motor = DCMotor(resistance=0.5, torque_constant=0.1, back_emf_constant=0.1, rotor_inertia=5e-4)
    drive = Drive(motor, ElasticTransmission(RATIO, stiffness=2000.0, damping=0.5))
    return px.System(robot, drives={"hub": drive}, joint_limits=False)


def pd_gains(model: px.LinearModel) -> tuple[float, float, np.ndarray]:
    """A PD on the motor angle referred to the joint, ``u = kp (r − θ_m/N) − kd ω_m/N`` [V],
    tuned on the linear model: on a small grid, the gains whose closed loop's poles below
    20 Hz (the hub's motion and the first bending mode) decay fastest."""
    angle = model.state_names.index("drives.motor_angle[hub]")
    speed = model.state_names.index("drives.motor_velocity[hub]")
    best = (-np.inf, 0.0, 0.0, model.A)
    for kp in np.geomspace(5.0, 500.0, 15):
        for kd in np.geomspace(0.5, 50.0, 15):
            gain = np.zeros((1, model.A.shape[0]))
            gain[0, angle], gain[0, speed] = kp / RATIO, kd / RATIO
            closed = model.A - model.B @ gain
            poles = np.linalg.eigvals(closed)
            slow = poles[np.abs(poles) < 2 * np.pi * 20.0]
            decay = float((-slow.real).min()) if slow.size else -np.inf
            if decay > best[0]:
                best = (decay, kp, kd, closed)
    return best[1], best[2], best[3]


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    system = build()
    model = px.linearize(system, outputs=["tip.acceleration[y]", "drives.motor_velocity[hub]"])
    print(
        f"linear model: {len(model.state_names)} states ({model.method}), "
        f"inputs {model.input_names}"
    )
    print("poles [1/s]:", np.array2string(model.poles(), precision=3, max_line_width=100))
    print("modes: frequency [Hz], damping ratio [-]")
    for mode in model.modes():
        print(f"  {mode.frequency:9.3f}  {mode.damping_ratio:8.4f}")
    voltage = "drives.hub.voltage"
    for output in model.output_names:
        zeros = model.zeros(voltage, output)
        anti = np.sort(np.abs(zeros[zeros.imag > 1e-6])) / (2 * np.pi)
        print(f"anti-resonances of {output} [Hz]:", np.array2string(anti, precision=3))

    from pinext.visualization import plots

    figure = plots.bode(model, voltage, "tip.acceleration[y]")
    written = plots.save(figure, out / "linear_model_bode", formats=("png",))
    figure = plots.bode(model, voltage, "drives.motor_velocity[hub]")
    written += plots.save(figure, out / "linear_model_bode_motor", formats=("png",))

    kp, kd, closed = pd_gains(model)
    print(f"PD on the motor angle: kp = {kp:.3g} V/rad, kd = {kd:.3g} V.s/rad")
    reference = 0.02  # a small step of the hub angle [rad]
    s_angle = system.layout["drives.motor_angle"]
    s_speed = system.layout["drives.motor_velocity"]

    def law(t: float, x: np.ndarray) -> np.ndarray:
        return np.array([kp * (reference - x[s_angle][0] / RATIO) - kd * x[s_speed][0] / RATIO])

    duration = 1.0
    traj = px.simulate(system, duration, control=law, rtol=1e-9, atol=1e-11, output_dt=duration)
    # the closed loop's response to the step: δx' = A_cl δx + B kp r
    b_ref = model.B[:, 0] * kp * reference
    blocks = np.block([[closed, b_ref[:, None]], [np.zeros((1, closed.shape[0] + 1))]])
    from scipy.linalg import expm

    linear = expm(blocks * duration)[0, -1]  # state 0: q:hub
    print(
        f"hub angle after {duration} s: simulate {traj.q[-1, 0]:.6f} rad, linear model "
        f"{linear:.6f} rad (difference {abs(traj.q[-1, 0] - linear):.1e} rad)"
    )
    print("wrote", ", ".join(str(p) for p in written))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out"))
    main(parser.parse_args(sys.argv[1:]).out)
