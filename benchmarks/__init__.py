"""On-demand benchmarks (not tests): ``python -m benchmarks NAME`` runs ``bench_NAME.py``."""

import os


def print_machine_load() -> None:
    """One line with the CPU count and load average: the machine is shared, so
    compare ratios measured in one run, not absolute times."""
    load = os.getloadavg()
    print(  # noqa: T201
        f"machine: {os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} "
        f"{load[2]:.1f} (other work inflates wall times, and CPU a little)",
        flush=True,
    )
