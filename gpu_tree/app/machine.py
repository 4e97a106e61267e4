"""What a benchmark ran on: the machine and the versions, recorded beside every figure."""

from __future__ import annotations

import importlib
import os
import platform

# (name shown, module imported) of every library a benchmark result depends on.
LIBRARIES = (
    ("numpy", "numpy"),
    ("numba", "numba"),
    ("scikit-learn", "sklearn"),
    ("lightgbm", "lightgbm"),
    ("xgboost", "xgboost"),
    ("gpu_tree", "gpu_tree"),
)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _meminfo_bytes(field: str) -> int | None:
    """A /proc/meminfo field (``MemTotal``, ``MemAvailable``) in bytes, or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def memory_bytes() -> int | None:
    """Total memory, or None where /proc/meminfo is not there."""
    return _meminfo_bytes("MemTotal")


def available_memory_bytes() -> int | None:
    """Bytes of memory available now (Linux /proc/meminfo, else sysconf), or None."""
    available = _meminfo_bytes("MemAvailable")
    if available is not None:
        return available
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def module_version(module: str) -> str:
    try:
        return str(importlib.import_module(module).__version__)
    except Exception:  # not installed, or broken: say so rather than stop
        return "not installed"


def usable_cores() -> int | None:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def machine_info() -> dict:
    return {
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),  # logical cores
        "usable_cores": usable_cores(),
        "memory_bytes": memory_bytes(),
        "memory_available_bytes": available_memory_bytes(),
        "load_average_at_start": (
            [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
        ),
        "versions": {
            "python": platform.python_version(),
            **{name: module_version(module) for name, module in LIBRARIES},
        },
    }
