"""Simulation core: System (state layout), simulate (event-driven, phased), Trajectory."""

from .component import Component, Event, Phase
from .controls import Schedule
from .outputs import OutputInfo, OutputTable
from .simulate import METHODS, simulate
from .system import System
from .trajectory import EnergyBalance, EventRecord, PhaseRecord, Trajectory

__all__ = [
    "METHODS",
    "Component",
    "EnergyBalance",
    "Event",
    "EventRecord",
    "OutputInfo",
    "OutputTable",
    "Phase",
    "PhaseRecord",
    "Schedule",
    "System",
    "Trajectory",
    "simulate",
]
