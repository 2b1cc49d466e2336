"""pinext.planning: design uses of dynamics — kinematics from matrix exponentials, control
functions (splines, Jacobian-based), reference motions, feedforward control, drive sizing,
design checks and optimal design (Negrean et al. 2009, §1–2; Vukobratović & Potkonjak, §20.4)."""

from .campbell import CampbellDiagram, campbell
from .catalogue import CatalogueMotor, HarmonicDrive, load_catalogue, load_harmonic_drives
from .control_functions import JointMotion, jacobian_control
from .design import DesignResult, DesignSpec, read_design, run_design
from .design_check import CheckRow, DesignCheck, DriveLimits, LinkLimits, check_design
from .design_report import write_design_html
from .drive_problem import DriveProblem
from .drive_sizing import (
    DriveReport,
    FlexibleLoads,
    GearChoice,
    best_gear_ratio,
    drive_requirements,
    winding_temperature,
)
from .elastic_tracking import ElasticTracking
from .feedforward import Feedforward, elastic_drive_feedforward, rest_to_rest, track_rest_to_rest
from .kinematics import ScrewAxes, poe_forward_kinematics, poe_jacobian, screw_axes
from .link_variables import section_properties
from .motion import Motion, RestToRest, as_motion
from .natural_frequency import first_natural_frequency
from .optimize import optimize
from .optimize_problem import Choice, Continuous, Evaluation, OptimalDesign, Problem
from .optimize_report import write_design_spec, write_optimize_html
from .splines import Spline3m

__all__ = [
    "CampbellDiagram",
    "CatalogueMotor",
    "CheckRow",
    "Choice",
    "Continuous",
    "DesignCheck",
    "DesignResult",
    "DesignSpec",
    "DriveLimits",
    "DriveProblem",
    "DriveReport",
    "ElasticTracking",
    "Evaluation",
    "Feedforward",
    "FlexibleLoads",
    "GearChoice",
    "HarmonicDrive",
    "JointMotion",
    "LinkLimits",
    "Motion",
    "OptimalDesign",
    "Problem",
    "RestToRest",
    "ScrewAxes",
    "Spline3m",
    "as_motion",
    "best_gear_ratio",
    "campbell",
    "check_design",
    "drive_requirements",
    "elastic_drive_feedforward",
    "first_natural_frequency",
    "jacobian_control",
    "load_catalogue",
    "load_harmonic_drives",
    "optimize",
    "poe_forward_kinematics",
    "poe_jacobian",
    "read_design",
    "rest_to_rest",
    "run_design",
    "screw_axes",
    "section_properties",
    "track_rest_to_rest",
    "winding_temperature",
    "write_design_html",
    "write_design_spec",
    "write_optimize_html",
]
