"""The CPU-models dashboard."""

from __future__ import annotations

from gridlake.serving.superset_assets.datasets import (
    CPU_EFFICIENCY,
    IPC,
    MISMATCH,
    SPEED_FACTORS,
)
from gridlake.serving.superset_assets.spec import Chart, Dashboard

CPU_MODELS = Dashboard(
    "cpu-models",
    "CPU models and benchmarks",
    "How fast each CPU model really is for each job type, against its HS23 benchmark, and what "
    "the grid runs on.",
    rows=(
        (
            Chart(
                "speed_factor_intervals",
                "Speed factor with 95% interval (all job types)",
                "exp(-model term) of log(CPU s/event) = task + model, relative to the "
                "reference model; the band is the bootstrap interval.",
                SPEED_FACTORS,
                "line",
                metrics=("ci_low", "speed_factor", "ci_high"),
                x="model",
                where=(("job_type", "==", "ALL"),),
                order_by=(("speed_factor", True),),
                x_label_rotation=30,
                width=6,
                options={"markerEnabled": True},
            ),
            Chart(
                "speed_factor_by_job_type",
                "Speed factor by job type",
                "The same fit per job type: where workloads disagree with each other.",
                SPEED_FACTORS,
                "bar",
                metrics=("speed_factor",),
                x="model",
                series=("job_type",),
                order_by=(("speed_factor", True),),
                x_label_rotation=30,
                width=6,
            ),
        ),
        (
            Chart(
                "benchmark_mismatch_table",
                "Benchmark mismatch",
                "Measured speed over the declared HS23 ratio with its 95% interval; flagged "
                "when the interval lies outside [0.9, 1.1].",
                MISMATCH,
                "table",
                series=("job_type", "model"),
                metrics=("ratio", "ratio_ci_low", "ratio_ci_high", "flagged_models", "n_jobs"),
                order_by=(("ratio", True),),
                width=7,
                height=55,
            ),
            Chart(
                "benchmark_ratio_bars",
                "Measured / HS23 by job type",
                "1 = the benchmark predicts the jobs.",
                MISMATCH,
                "bar",
                metrics=("ratio",),
                x="job_type",
                series=("microarchitecture",),
                width=5,
                height=55,
            ),
        ),
        (
            Chart(
                "microarchitecture_mix",
                "Microarchitecture mix (core-hours)",
                "Core-hours of all attempts per CPU microarchitecture.",
                CPU_EFFICIENCY,
                "pie",
                metrics=("core_hours",),
                series=("microarchitecture",),
                width=4,
            ),
            Chart(
                "efficiency_by_architecture",
                "CPU efficiency by microarchitecture and job type",
                "CPU-hours over core-hours.",
                CPU_EFFICIENCY,
                "heatmap",
                metrics=("cpu_efficiency",),
                x="job_type",
                series=("microarchitecture",),
                number_format=".0%",
                width=8,
                options={"show_values": True},
            ),
        ),
        (
            Chart(
                "ipc_by_architecture",
                "Instructions per cycle by microarchitecture and job type",
                "Why speed factors differ by workload: IPC fitted from the hosts' hardware "
                "counters (perf) and the jobs that ran on them. Hosts without counters (VMs) are "
                "not in it.",
                IPC,
                "heatmap",
                metrics=("ipc",),
                x="job_type",
                series=("microarchitecture",),
                number_format=".2f",
                width=12,
                options={"show_values": True},
            ),
        ),
    ),
)

# 4. I/O signatures -----------------------------------------------------------------------------
