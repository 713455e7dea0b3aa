"""What the benchmark reports say about the machine they ran on (shared by bench/*/report.py)."""
import os
import platform
import re
import subprocess


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def ucx_version():
    try:
        out = subprocess.run(["ucx_info", "-v"], capture_output=True, text=True).stdout
    except OSError:
        return "unknown"
    found = re.search(r"(\d+\.\d+\.\d+)", out)
    return found.group(1) if found else "unknown"


def summary():
    """CPU, cores, kernel and UCX version in one line."""
    return f"{cpu_model()}, {os.cpu_count()} cores, Linux {platform.release()}, UCX {ucx_version()}"
