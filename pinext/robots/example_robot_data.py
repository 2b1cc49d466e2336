"""Real robots by name: the URDF files of example-robot-data (``pip install "pinext[robots]"``).

``pinext.load_robot("ur5")`` finds ``ur_description/urdf/ur5_robot.urdf`` in the
``cmeel.prefix/share/example-robot-data/robots`` folder that the ``example-robot-data`` wheel
installs, and loads it with :func:`pinext.load_urdf` (meshes resolve through the package
folder). The names are example-robot-data's own (``ur5``, ``panda``, ``talos``, ``solo12``,
...); every other URDF file of the collection is reachable by its file stem
(``ur5_joint_limited_robot``). Legged robots, humanoids and drones get a free-flyer root joint,
as example-robot-data's loaders give them.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from importlib import resources
from pathlib import Path
from typing import Any

from ..exceptions import RobotNotFound

#: How to get the robot descriptions.
INSTALL_HINT = 'Install the robot descriptions with: pip install "pinext[robots]"'

#: Name -> (URDF path under ``robots/``, free-flyer root joint).
ROBOTS: dict[str, tuple[str, bool]] = {
    "a1": ("a1_description/urdf/a1.urdf", True),
    "allegro": ("allegro_hand_description/urdf/allegro_right_hand.urdf", False),
    "allegro_left_hand": ("allegro_hand_description/urdf/allegro_left_hand.urdf", False),
    "allegro_right_hand": ("allegro_hand_description/urdf/allegro_right_hand.urdf", False),
    "anymal": ("anymal_b_simple_description/robots/anymal.urdf", True),
    "anymal_c": ("anymal_c_simple_description/urdf/anymal.urdf", True),
    "anymal_kinova": ("anymal_b_simple_description/robots/anymal-kinova.urdf", True),
    "asr_twodof": ("asr_twodof_description/urdf/TwoDofs.urdf", False),
    "b1": ("b1_description/urdf/b1.urdf", True),
    "b1_z1": ("b1_description/urdf/b1-z1.urdf", True),
    "baxter": ("baxter_description/urdf/baxter.urdf", False),
    "bolt": ("bolt_description/robots/bolt.urdf", True),
    "centauro": ("centauro_description/urdf/centauro.urdf", True),
    "double_pendulum": ("double_pendulum_description/urdf/double_pendulum.urdf", False),
    "finger_edu": ("finger_edu_description/robots/finger_edu.urdf", False),
    "g1": ("g1_description/urdf/g1_29dof_rev_1_0.urdf", True),
    "go1": ("go1_description/urdf/go1.urdf", True),
    "go2": ("go2_description/urdf/go2.urdf", True),
    "hector": ("hector_description/robots/quadrotor_base.urdf", True),
    "human": ("human_description/robots/human.urdf", True),
    "hyq": ("hyq_description/robots/hyq_no_sensors.urdf", True),
    "icub": ("icub_description/robots/icub.urdf", True),
    "icub_reduced": ("icub_description/robots/icub_reduced.urdf", True),
    "iris": ("iris_description/robots/iris_simple.urdf", True),
    "kinova": ("kinova_description/robots/kinova.urdf", False),
    "laikago": ("laikago_description/urdf/laikago.urdf", True),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "panda_collision": ("panda_description/urdf/panda_collision.urdf", False),
    "pr2": ("pr2_description/urdf/pr2.urdf", False),
    "quadruped": ("quadruped_description/urdf/quadruped.urdf", True),
    "romeo": ("romeo_description/urdf/romeo.urdf", True),
    "simple_humanoid": ("simple_humanoid_description/urdf/simple_humanoid.urdf", True),
    "so_arm_100": ("so_arm_description/urdf/so100.urdf", False),
    "so_arm_101": ("so_arm_description/urdf/so101.urdf", False),
    "solo8": ("solo_description/robots/solo.urdf", True),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "talos": ("talos_data/robots/talos_reduced.urdf", True),
    "talos_arm": ("talos_data/robots/talos_left_arm.urdf", False),
    "talos_full": ("talos_data/robots/talos_full_v2.urdf", True),
    "tiago": ("tiago_description/robots/tiago.urdf", False),
    "tiago_dual": ("tiago_description/robots/tiago_dual.urdf", False),
    "tiago_no_hand": ("tiago_description/robots/tiago_no_hand.urdf", False),
    "ur3": ("ur_description/urdf/ur3_robot.urdf", False),
    "ur3_gripper": ("ur_description/urdf/ur3_gripper.urdf", False),
    "ur3_limited": ("ur_description/urdf/ur3_joint_limited_robot.urdf", False),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "ur5_gripper": ("ur_description/urdf/ur5_gripper.urdf", False),
    "ur5_limited": ("ur_description/urdf/ur5_joint_limited_robot.urdf", False),
    "ur10": ("ur_description/urdf/ur10_robot.urdf", False),
    "ur10_limited": ("ur_description/urdf/ur10_joint_limited_robot.urdf", False),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", False),
    "z1": ("z1_description/urdf/z1.urdf", False),
}


def robots_dir() -> Path | None:
    """The ``robots`` folder of example-robot-data, or None if it is not installed.

    Looked for under ``cmeel.prefix/share/example-robot-data/robots`` in the interpreter's
    site-packages folders, and in ``$EXAMPLE_ROBOT_DATA_DIR`` when set.
    """
    env = os.environ.get("EXAMPLE_ROBOT_DATA_DIR")
    candidates = [Path(env)] if env else []
    bases = [sysconfig.get_paths()["purelib"], *site.getsitepackages(), *sys.path]
    for base in bases:
        candidates.append(Path(base) / "cmeel.prefix" / "share" / "example-robot-data" / "robots")
    for path in candidates:
        if path.is_dir():
            return path
    return None


def _key(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def _index(folder: Path) -> dict[str, tuple[Path, bool]]:
    """Every loadable name -> (URDF path, free flyer): the names above, then file stems."""
    found = {name: (folder / rel, ff) for name, (rel, ff) in ROBOTS.items()}
    found = {name: entry for name, entry in found.items() if entry[0].is_file()}
    for path in sorted(folder.rglob("*.urdf")):
        found.setdefault(_key(path.stem), (path, False))
    return found


def names() -> list[str]:
    """The example-robot-data names :func:`pinext.load_robot` accepts here (empty without
    the collection)."""
    folder = robots_dir()
    return sorted(_index(folder)) if folder is not None else []


def locate(name: str) -> tuple[Path, bool]:
    """The URDF file of a robot name and whether it gets a free-flyer root joint.

    Raises:
        RobotNotFound: example-robot-data is not installed, or the name is unknown (the
            message lists the available names, the closest first).
    """
    folder = robots_dir()
    if folder is None:
        raise RobotNotFound(name, [], f"example-robot-data is not installed. {INSTALL_HINT}")
    index = _index(folder)
    key = _key(name)
    if key in index:
        return index[key]
    raise RobotNotFound(name, sorted(index), "Any URDF file path works too")


def load(name: str, *, root_joint: Any = None, package_dirs: Any = None, **kwargs: Any):
    """Load an example-robot-data robot (see :func:`pinext.load_robot`)."""
    from ..robot import load_urdf

    path, free_flyer = locate(name)
    if root_joint is None:
        root_joint = "freeflyer" if free_flyer else "fixed"
    shipped = resources.files("pinext.robots") / f"{_key(name)}.pinext.toml"
    if "extensions" not in kwargs and shipped.is_file():  # e.g. Solo12's feet on the ground
        kwargs["extensions"] = str(shipped)
    dirs = [package_dirs] if isinstance(package_dirs, str) else list(package_dirs or [])
    dirs.append(str(path.parents[2]))  # share/example-robot-data/robots/..: package:// roots
    return load_urdf(path, package_dirs=dirs, root_joint=root_joint, **kwargs)
