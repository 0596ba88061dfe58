"""The failures dashboard."""

from __future__ import annotations

from gridlake.serving.superset_assets.datasets import (
    FAILURES,
    JOB_LENGTH,
    MEMORY_PER_THREAD,
    MULTICORE,
)
from gridlake.serving.superset_assets.spec import Chart, Dashboard, NativeFilter

FAILURES_DASHBOARD = Dashboard(
    "failures-job-length",
    "Failures and job length",
    "How the chance of failing grows with a job's duration, what each failure costs, and how "
    "long jobs should be.",
    rows=(
        (
            Chart(
                "failure_probability_curves",
                "Failure probability vs duration",
                "Failed attempts over attempts per wall-clock bin (any failure mode).",
                FAILURES,
                "line",
                metrics=("failure_probability",),
                x="duration",
                series=("job_type",),
                where=(("failure_mode", "==", "ALL"),),
                order_by=(("duration", True),),
                number_format=".0%",
                x_label_rotation=30,
                width=6,
                options={"markerEnabled": True},
            ),
            Chart(
                "hazard_curves",
                "Failure hazard vs duration",
                "Failures per wall-hour at risk in each bin (life table).",
                FAILURES,
                "line",
                metrics=("hazard_per_hour",),
                x="duration",
                series=("job_type",),
                where=(("failure_mode", "==", "ALL"),),
                order_by=(("duration", True),),
                x_label_rotation=30,
                width=6,
                options={"markerEnabled": True},
            ),
        ),
        (
            Chart(
                "failures_by_mode",
                "Failures by mode and duration",
                "Failed attempts per wall-clock bin and failure mode (all job types).",
                FAILURES,
                "bar",
                metrics=("failures",),
                x="duration",
                series=("failure_mode",),
                where=(("failure_mode", "!=", "ALL"),),
                order_by=(("duration", True),),
                stack=True,
                x_label_rotation=30,
                width=6,
            ),
            Chart(
                "wasted_by_mode",
                "Wasted core-hours by failure mode",
                "Core-hours of failed attempts per mode.",
                FAILURES,
                "pie",
                metrics=("wasted_core_hours",),
                series=("failure_mode",),
                where=(("failure_mode", "!=", "ALL"),),
                width=6,
            ),
        ),
        (
            Chart(
                "job_length_table",
                "Job length advice",
                "Initialisation, hazard, advised and current payload length, and the "
                "core-hours a year the advice would save.",
                JOB_LENGTH,
                "table",
                series=("job_type",),
                metrics=(
                    "init_seconds",
                    "hazard_per_hour",
                    "optimal_hours",
                    "current_median_hours",
                    "core_hours_saved_per_year",
                    "n_jobs",
                ),
                order_by=(("hazard_per_hour", False),),
                width=7,
                height=45,
            ),
            Chart(
                "multicore_efficiency",
                "CPU efficiency by cores",
                "Successful attempts: CPU efficiency per core count and job type.",
                MULTICORE,
                "bar",
                metrics=("cpu_efficiency",),
                x="job_type",
                series=("cores",),
                number_format=".0%",
                width=5,
                height=45,
            ),
        ),
        (
            Chart(
                "memory_per_thread",
                "Memory per thread",
                "Fitted peak RSS of a single-thread job and of each extra thread (95 % interval), "
                "and the memory one 8-thread job saves against eight single-thread jobs.",
                MEMORY_PER_THREAD,
                "table",
                series=("job_type",),
                metrics=(
                    "base_mb",
                    "per_thread_mb",
                    "per_thread_mb_low",
                    "per_thread_mb_high",
                    "saved_fraction_8_threads",
                    "jobs",
                ),
                order_by=(("base_mb", False),),
                width=12,
                height=40,
            ),
        ),
    ),
    filters=(NativeFilter("job_type", "Job type", FAILURES, "job_type"),),
)
