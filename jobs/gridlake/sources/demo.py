"""Demo data source: one synthetic but calibrated week of grid jobs, node samples and perfSONAR.

The records are in the canonical form of the message contracts in ``schemas/`` (``grid.jobs``,
``grid.nodes``, ``grid.network``). Figures follow ``domain.md``: the job mix by count, the
efficiency of each job type, single- and 8-core jobs, failures that grow with duration, CPU speed
that depends on the CPU model *and* on the workload, I/O-wait signatures on the worker nodes and a
congested network path. What was planted is returned as ``truth`` so that tests and demos can check
that the warehouse finds it again:

- ``slow_storage_site``: its local scratch disks are slow (HDD, high await and %util, high iowait),
  so I/O-heavy job types, pile above all, are less CPU-efficient there;
- ``efficiency_target``: the payload CPU efficiency aimed at per site, VO and job type (8-core jobs
  get ``multicore_efficiency_factor`` on top, and every job pays a mostly idle initialisation);
- ``speed_factor``: true speed of each CPU model relative to ``reference_cpu_model`` per job type
  (inverse of CPU time per event for the same task); it differs from the HS23 ratio, mostly for
  simulation on Ivy Bridge (Geant4 runs ~50% faster on Haswell while the benchmark shows less);
- ``outlier_job_ids``: ~1% of jobs whose CPU time exceeds wall x cores (a 1-core slot running
  several threads);
- ``congested_path``: one ordered site pair whose link runs close to capacity in the busy hours,
  with higher one-way delay, packet loss and retransmits and lower throughput;
- ``memory_pressure``: one monitored host swapping during a few hours of the node window;
- ``ipc``: instructions per cycle by microarchitecture and job type (the simulator's
  ``planted_ipc``), in a ``perf`` record per node sample; hosts of virtual sites say
  ``not_supported``, as perf does on most VMs.

Stdlib only and deterministic: the same arguments give the same bytes.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from gridlake.sources import synth
from gridlake.sources.simulate import CLOCK_HZ, IPC_NOISE, planted_ipc

# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------

# CPU models and HEPscore23 per core, copied from the HEPiX Benchmarking WG table
# realdata/hepix-benchmark-scores/HS23scores.csv (columns CPU, Ncores, Score/Ncores; rows with SMT
# enabled, the usual grid worker-node setup). Embedded because that folder may be absent at run
# time. Values: (microarchitecture, logical cores per node, HS23 per core); comment: row's site.
CPU_MODELS: dict[str, tuple[str, int, float]] = {
    "Intel(R) Xeon(R) CPU E5-2650 v2 @ 2.60GHz": ("Ivy Bridge", 32, 8.3),  # GRIF
    "Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz": ("Haswell", 32, 10.0),  # CERN
    "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz": ("Broadwell", 56, 11.3),  # CERN
    "Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz": ("Skylake", 64, 10.9),  # CERN
    "AMD EPYC 7302 16-Core Processor": ("Zen 2", 64, 15.5),  # CERN
}
IVY, HASWELL, BROADWELL, SKYLAKE, EPYC = list(CPU_MODELS)
REFERENCE_CPU_MODEL = HASWELL

JOB_TYPES = ("evgen", "simul", "pile", "reprocessing", "merge", "analysis")

# How far the true speed of a model departs from its HS23 ratio, per job type (1.0 = the benchmark
# predicts it). Factors agree within a few percent, except Geant4 simulation on Ivy Bridge
# (domain.md: ~50% slower than Haswell where the benchmark shows ~10-20%).
WORKLOAD_DEVIATION: dict[str, dict[str, float]] = {
    IVY: {"evgen": 1.00, "simul": 0.80, "pile": 0.95, "reprocessing": 0.96, "merge": 1.00,
          "analysis": 0.97},
    HASWELL: dict.fromkeys(JOB_TYPES, 1.0),
    BROADWELL: {"evgen": 1.00, "simul": 1.02, "pile": 0.98, "reprocessing": 0.99, "merge": 1.00,
                "analysis": 1.01},
    SKYLAKE: {"evgen": 0.98, "simul": 1.06, "pile": 1.03, "reprocessing": 1.02, "merge": 1.00,
              "analysis": 1.00},
    EPYC: {"evgen": 1.04, "simul": 0.94, "pile": 0.97, "reprocessing": 0.96, "merge": 1.00,
           "analysis": 1.02},
}  # fmt: skip


@dataclass(frozen=True)
class SiteSpec:
    name: str
    lat: float
    lon: float
    vos: tuple[str, ...]
    fleet: dict[str, float]  # CPU model -> share of worker nodes
    efficiency_factor: float  # small site-wide factor on every job type
    virtual: bool  # worker nodes are VMs (some steal time)


SITES: tuple[SiteSpec, ...] = (
    SiteSpec("CERN-PROD", 46.23, 6.05, ("atlas", "cms"),
             {HASWELL: 0.3, BROADWELL: 0.3, SKYLAKE: 0.2, EPYC: 0.2}, 1.00, True),
    SiteSpec("BNL-ATLAS", 40.87, -72.88, ("atlas",),
             {BROADWELL: 0.4, SKYLAKE: 0.3, EPYC: 0.3}, 1.02, False),
    SiteSpec("FZK-LCG2", 49.10, 8.43, ("atlas", "cms"),
             {IVY: 0.35, HASWELL: 0.35, BROADWELL: 0.3}, 0.99, False),
    SiteSpec("RAL-LCG2", 51.57, -1.31, ("atlas", "cms"),
             {IVY: 0.3, HASWELL: 0.3, EPYC: 0.4}, 0.98, False),
    SiteSpec("IN2P3-CC", 45.78, 4.87, ("atlas", "cms"),
             {HASWELL: 0.5, SKYLAKE: 0.5}, 1.01, False),
    SiteSpec("PIC", 41.50, 2.11, ("atlas", "cms"),
             {BROADWELL: 0.5, EPYC: 0.5}, 1.00, False),
)  # fmt: skip


@dataclass(frozen=True)
class JobTypeSpec:
    share: float  # share of jobs by count
    cores: tuple[tuple[int, float], ...]  # (cores, weight) per task
    wall_hours: tuple[float, float]  # target payload wall-clock per job
    cpu_per_event: tuple[float, float]  # per task, seconds on the reference model (log-uniform)
    efficiency: float  # payload CPU efficiency of a 1-core job at a normal site
    slow_storage_factor: float  # efficiency multiplier at the slow-storage site
    io_share: float  # share of the non-CPU wall-clock spent reading input
    input_mb_per_event: float
    output_mb_per_event: float
    rss_mb_1core: float
    system_fraction: float  # of CPU time
    memory_failure: float  # probability of an out-of-memory kill
    atlas_share: float  # VO split where both VOs run


# Job mix by count from domain.md (analysis 49, evgen 11, merge 7 + pmerge 5, simul 7,
# reprocessing 4, pile 4), normalised over these six types.
JOB_TYPE_SPECS: dict[str, JobTypeSpec] = {
    "evgen": JobTypeSpec(11 / 87, ((1, 0.85), (8, 0.15)), (3.0, 12.0), (1.0, 8.0), 0.93, 0.99,
                         0.1, 0.0, 0.04, 900, 0.02, 0.002, 0.7),
    "simul": JobTypeSpec(7 / 87, ((8, 0.85), (1, 0.15)), (5.0, 14.0), (120.0, 400.0), 0.91, 0.98,
                         0.3, 0.05, 1.0, 1800, 0.02, 0.006, 0.7),
    "pile": JobTypeSpec(4 / 87, ((8, 1.0),), (2.0, 6.0), (20.0, 60.0), 0.68, 0.68,
                        0.85, 3.0, 0.6, 2600, 0.06, 0.04, 0.7),
    "reprocessing": JobTypeSpec(4 / 87, ((8, 1.0),), (1.0, 3.0), (10.0, 30.0), 0.72, 0.80,
                                0.8, 1.0, 0.5, 2400, 0.05, 0.03, 0.7),
    "merge": JobTypeSpec(12 / 87, ((1, 1.0),), (0.2, 1.2), (0.005, 0.03), 0.48, 0.75,
                         0.9, 0.25, 0.25, 700, 0.15, 0.002, 0.7),
    "analysis": JobTypeSpec(49 / 87, ((1, 1.0),), (0.2, 4.0), (0.01, 0.2), 0.70, 0.88,
                            0.7, 0.08, 0.005, 1500, 0.05, 0.01, 0.55),
}  # fmt: skip
CMS_ANALYSIS_EFFICIENCY_FACTOR = 1.15  # CMS analysis is I/O-light (domain.md)
MULTICORE_EFFICIENCY_FACTOR = 0.96  # Amdahl: 8-core jobs lose a few percent to serial parts
INIT_CPU_FRACTION = 0.6  # initialisation is single-threaded and partly waits on CVMFS
MEMORY_LIMIT_MB_PER_CORE = 2000

# Failure modes: exit codes follow the usual Unix conventions (sysexits EX_NOINPUT, 128 + signal).
EXIT_CODES = {"stage-in": 66, "lost-heartbeat": 143, "memory": 137, "app-crash": 139}
STAGE_IN_FAILURE = 0.035  # per attempt that reads input; doubled at the slow-storage site
APP_CRASH_FAILURE = 0.015
CRASH_PER_HOUR = 0.001
HEARTBEAT_PER_HOUR = 0.003  # long jobs are more likely to be lost
RETRY_PROBABILITY = 0.8
MAX_ATTEMPTS = 3
OUTLIER_SHARE = 0.01

HOSTS_PER_SITE = 8
MONITORED_HOSTS_PER_SITE = 3
NODE_INTERVAL_SECONDS = 300
NODE_RECORD_BUDGET = 9000
THROUGHPUT_INTERVAL_SECONDS = 6 * 3600
LATENCY_PACKETS_PER_SECOND = 10
BUSY_HOURS_UTC = (8, 20)  # the congested link is loaded in these hours every day
WEEK_SECONDS = 7 * 86400


@dataclass
class DemoWeek:
    jobs: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    network: list[dict[str, Any]] = field(default_factory=list)
    truth: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _host_domain(site: str) -> str:
    return f"{site.lower()}.example.org"


def hs23_speed_factor(cpu_model: str) -> float:
    """Speed relative to the reference model predicted by the benchmark alone."""
    return CPU_MODELS[cpu_model][2] / CPU_MODELS[REFERENCE_CPU_MODEL][2]


def speed_factor(cpu_model: str, job_type: str) -> float:
    """True speed relative to the reference model for one job type (planted)."""
    return hs23_speed_factor(cpu_model) * WORKLOAD_DEVIATION[cpu_model][job_type]


# --------------------------------------------------------------------------------------------
# Jobs
# --------------------------------------------------------------------------------------------


@dataclass
class _Host:
    name: str
    site: str
    cpu_model: str

    @property
    def ncpu(self) -> int:
        return CPU_MODELS[self.cpu_model][1]


@dataclass
class _Task:
    task_id: str
    vo: str
    job_type: str
    cores: int
    events: int
    cpu_per_event: float  # reference model, seconds
    input_bytes_fixed: int  # evgen reads a small configuration, not per-event input


@dataclass
class _Attempt:
    """One job attempt with numeric times, kept to derive the node samples."""

    record: dict[str, Any]
    host: str
    start: int
    end: int
    cores: int
    cpu: float
    io_share: float


def _efficiency_targets(sites: list[SiteSpec], slow_site: str) -> dict[str, Any]:
    targets: dict[str, Any] = {}
    for site in sites:
        per_vo: dict[str, dict[str, float]] = {}
        for vo in site.vos:
            per_type = {}
            for job_type, spec in JOB_TYPE_SPECS.items():
                eff = spec.efficiency * site.efficiency_factor
                if vo == "cms" and job_type == "analysis":
                    eff *= CMS_ANALYSIS_EFFICIENCY_FACTOR
                if site.name == slow_site:
                    eff *= spec.slow_storage_factor
                per_type[job_type] = round(min(eff, 0.97), 4)
            per_vo[vo] = per_type
        targets[site.name] = per_vo
    return targets


def _make_tasks(rng: random.Random, n_jobs: int) -> dict[tuple[str, str], list[_Task]]:
    tasks: dict[tuple[str, str], list[_Task]] = {}
    serial = 0
    for job_type, spec in JOB_TYPE_SPECS.items():
        for vo in ("atlas", "cms"):
            vo_share = spec.atlas_share if vo == "atlas" else 1 - spec.atlas_share
            expected = n_jobs * spec.share * vo_share
            n_tasks = max(2, round(expected / 15))
            for _ in range(n_tasks):
                serial += 1
                cores = synth.pick(rng, spec.cores)
                cpe = synth.loguniform(rng, *spec.cpu_per_event)
                wall_h = rng.uniform(*spec.wall_hours)
                # events per job so that the job lasts about wall_h on the reference model
                events = max(1, round(wall_h * 3600 * cores * spec.efficiency / cpe))
                if events > 100:
                    events = round(events, -2 if events < 10_000 else -3)
                fixed = rng.randrange(2_000_000, 50_000_000) if job_type == "evgen" else 0
                tasks.setdefault((vo, job_type), []).append(
                    _Task(f"{vo}-{job_type}-{serial:05d}", vo, job_type, cores, events, cpe, fixed)
                )
    return tasks


def _queue(site: str, job_type: str, cores: int) -> str:
    if job_type == "analysis":
        return f"ANALY_{site}"
    return f"{site}_{'MCORE' if cores > 1 else 'SCORE'}"


def _draw_failure(rng: random.Random, spec: JobTypeSpec, hours: float, slow: bool) -> str | None:
    reads_input = spec.input_mb_per_event > 0
    p_stage = (STAGE_IN_FAILURE * (2 if slow else 1)) if reads_input else 0.005
    modes = (
        ("stage-in", p_stage),
        ("memory", spec.memory_failure),
        ("lost-heartbeat", HEARTBEAT_PER_HOUR * hours),
        ("app-crash", APP_CRASH_FAILURE + CRASH_PER_HOUR * hours),
    )
    u = rng.random()
    for mode, p in modes:
        if u < p:
            return mode
        u -= p
    return None


def _run_attempt(
    rng: random.Random,
    task: _Task,
    host: _Host,
    target_eff: float,
    slow: bool,
    base_id: str,
    attempt: int,
    end_or_submit: tuple[str, int],
) -> _Attempt:
    """Simulate one attempt; time is anchored on its end (first try) or its submission (retry)."""
    spec = JOB_TYPE_SPECS[task.job_type]
    cores = task.cores
    events = task.events
    if task.job_type == "analysis":  # user jobs split by files: uneven sizes within a task
        events = max(1, round(events * rng.uniform(0.3, 1.2)))
    eff = target_eff * (MULTICORE_EFFICIENCY_FACTOR if cores > 1 else 1.0)
    eff = synth.clip(eff * rng.gauss(1.0, 0.05), 0.05, 0.985)
    speed = speed_factor(host.cpu_model, task.job_type)
    payload_cpu = events * task.cpu_per_event / speed * rng.gauss(1.0, 0.03)
    payload_wall = payload_cpu / (cores * eff)
    init_wall = rng.uniform(60, 300)
    input_total = task.input_bytes_fixed + int(events * spec.input_mb_per_event * 1e6)
    output_total = int(events * spec.output_mb_per_event * 1e6 * rng.uniform(0.9, 1.1))
    rss = spec.rss_mb_1core * (1.0 if cores == 1 else 1.25) + 200 * (cores - 1)
    rss *= rng.uniform(0.9, 1.1)

    failure = _draw_failure(rng, spec, (payload_wall + init_wall) / 3600, slow)
    n_events: int | None = events
    if failure is None:
        frac = 1.0
    elif failure == "stage-in":
        frac = 0.0
    elif failure == "memory":
        frac = rng.uniform(0.3, 1.0)
    else:
        frac = rng.uniform(0.02, 1.0)

    if failure == "stage-in":
        wall = rng.uniform(60, 900)
        cpu = wall * rng.uniform(0.02, 0.1)
        read_time = wall * rng.uniform(0.5, 0.9)
        input_bytes = int(input_total * rng.uniform(0.0, 0.3))
        n_events, output_bytes, rss = 0, 0, rng.uniform(100, 400)
    else:
        wall = init_wall + frac * payload_wall
        cpu = INIT_CPU_FRACTION * init_wall + frac * payload_cpu
        read_time = (frac * payload_wall * (1 - eff) * spec.io_share + 0.2 * init_wall) * (
            rng.uniform(0.95, 1.05)
        )
        input_bytes = int(input_total * frac)
        output_bytes = output_total if failure is None else 0
        if failure is not None:
            n_events = None if failure == "lost-heartbeat" else int(events * frac)
        if failure == "memory":
            rss = MEMORY_LIMIT_MB_PER_CORE * cores * rng.uniform(1.0, 1.15)

    wall_s = max(1, round(wall))
    anchor, t0 = end_or_submit
    if anchor == "end":
        end = t0
        start = end - wall_s
        submit = start - int(rng.expovariate(1 / 2400))
    else:
        submit = t0
        start = submit + int(rng.expovariate(1 / 1200))
        end = start + wall_s
    system = cpu * spec.system_fraction * rng.uniform(0.8, 1.2)
    record = {
        "job_id": base_id if attempt == 1 else f"{base_id}.{attempt}",
        "attempt": attempt,
        "retry_of": None
        if attempt == 1
        else (base_id if attempt == 2 else f"{base_id}.{attempt - 1}"),
        "vo": task.vo,
        "site": host.site,
        "host": host.name,
        "queue": _queue(host.site, task.job_type, cores),
        "task_id": task.task_id,
        "job_type": task.job_type,
        "cpu_model": host.cpu_model,
        "cores": cores,
        "submit_time": synth.ts(submit),
        "start_time": synth.ts(start),
        "end_time": synth.ts(end),
        "wall_seconds": end - start,
        "cpu_user_seconds": round(cpu - system, 2),
        "cpu_system_seconds": round(system, 2),
        "events": n_events,
        "max_rss_mb": round(rss, 1),
        "input_bytes": input_bytes,
        "output_bytes": output_bytes,
        "read_time_seconds": round(read_time, 1),
        "status": "success" if failure is None else "failed",
        "exit_code": 0 if failure is None else EXIT_CODES[failure],
        "failure_mode": failure,
        "benchmark_type": "hs23",
        "benchmark_per_core": CPU_MODELS[host.cpu_model][2],
        "source_format": "canonical",
    }
    return _Attempt(record, host.name, start, end, cores, cpu, spec.io_share)


def _make_hosts(rng: random.Random, sites: list[SiteSpec]) -> dict[str, list[_Host]]:
    hosts: dict[str, list[_Host]] = {}
    for site in sites:
        models = sorted(site.fleet, key=lambda m: -site.fleet[m])
        site_hosts = []
        for i in range(HOSTS_PER_SITE):
            # the monitored hosts (the first ones) cover distinct models where the fleet allows
            model = (
                models[i % len(models)]
                if i < MONITORED_HOSTS_PER_SITE
                else synth.pick(rng, site.fleet)
            )
            site_hosts.append(_Host(f"wn{i + 1:03d}.{_host_domain(site.name)}", site.name, model))
        hosts[site.name] = site_hosts
    return hosts


def _generate_jobs(
    rng: random.Random,
    sites: list[SiteSpec],
    hosts: dict[str, list[_Host]],
    targets: dict[str, Any],
    slow_site: str,
    week0: int,
    jobs_per_site: int,
) -> tuple[list[_Attempt], list[str]]:
    week_end = week0 + WEEK_SECONDS
    tasks = _make_tasks(rng, jobs_per_site * len(sites))
    type_weights = {t: s.share for t, s in JOB_TYPE_SPECS.items()}
    attempts: list[_Attempt] = []
    serial = 0
    for site in sites:
        slow = site.name == slow_site
        for _ in range(jobs_per_site):
            serial += 1
            base_id = str(6_500_000_000 + serial)
            job_type = synth.pick(rng, type_weights)
            spec = JOB_TYPE_SPECS[job_type]
            vo = "atlas" if site.vos == ("atlas",) or rng.random() < spec.atlas_share else "cms"
            task = rng.choice(tasks[(vo, job_type)])
            eff = targets[site.name][vo][job_type]
            anchor: tuple[str, int] = ("end", week0 + rng.randrange(WEEK_SECONDS))
            for attempt in range(1, MAX_ATTEMPTS + 1):
                host = rng.choice(hosts[site.name])
                run = _run_attempt(rng, task, host, eff, slow, base_id, attempt, anchor)
                if run.end >= week_end:
                    break  # a retry that would end after the week is not in this week's data
                attempts.append(run)
                if run.record["status"] == "success" or rng.random() >= RETRY_PROBABILITY:
                    break
                anchor = ("submit", run.end + rng.randrange(120, 1800))

    # Outliers: 1-core jobs that ran several threads, so CPU time exceeds wall-clock x cores.
    candidates = [
        a for a in attempts
        if a.record["status"] == "success" and a.cores == 1 and a.record["wall_seconds"] >= 600
    ]  # fmt: skip
    n_outliers = min(len(candidates), max(1, round(OUTLIER_SHARE * len(attempts))))
    outliers = rng.sample(candidates, n_outliers)
    for a in outliers:
        rec = a.record
        cpu = rec["wall_seconds"] * rng.uniform(1.4, 3.2)
        system = cpu * JOB_TYPE_SPECS[rec["job_type"]].system_fraction
        rec["cpu_user_seconds"] = round(cpu - system, 2)
        rec["cpu_system_seconds"] = round(system, 2)
        a.cpu = cpu
    return attempts, sorted(a.record["job_id"] for a in outliers)


# --------------------------------------------------------------------------------------------
# Node samples
# --------------------------------------------------------------------------------------------


def _disk_sample(
    rng: random.Random, device: str, kind: str, io_level: float, write_share: float
) -> dict[str, Any]:
    """iostat -x numbers for one device; io_level is the share of CPU time waiting on it."""
    if kind == "hdd":  # saturates: few IOPS, long queues
        r_s = synth.clip((40 + 900 * io_level) * rng.uniform(0.85, 1.15), 5, 260)
        r_await = (8 + 400 * io_level) * rng.uniform(0.8, 1.25)
        w_await = r_await * rng.uniform(0.6, 1.0)
        util = synth.clip(30 + 350 * io_level + rng.gauss(0, 3), 5, 99.9)
        kib = rng.uniform(100, 160)
    elif kind == "nvme":
        r_s = (200 + 20_000 * io_level) * rng.uniform(0.8, 1.2)
        r_await = (0.1 + 2 * io_level) * rng.uniform(0.8, 1.25)
        w_await = r_await * rng.uniform(0.8, 1.6)
        util = synth.clip(5 + 300 * io_level + rng.gauss(0, 2), 1, 99.0)
        kib = rng.uniform(32, 128)
    else:  # system disk: light
        r_s = rng.uniform(0, 5) + 2000 * io_level * 0.01
        r_await = rng.uniform(1, 5)
        w_await = rng.uniform(1, 8)
        util = synth.clip(rng.uniform(1, 5) + 20 * io_level * 0.1, 0, 99.0)
        kib = rng.uniform(8, 32)
    w_s = r_s * write_share * rng.uniform(0.7, 1.3) + (rng.uniform(2, 20) if kind == "sys" else 0)
    return {
        "device": device,
        "r_s": round(r_s, 2),
        "w_s": round(w_s, 2),
        "rkb_s": round(r_s * kib, 1),
        "wkb_s": round(w_s * kib * 0.8, 1),
        "r_await_ms": round(r_await, 2),
        "w_await_ms": round(w_await, 2),
        "aqu_sz": round((r_s * r_await + w_s * w_await) / 1000, 2),  # Little's law
        "util_pct": round(util, 1),
    }


def _generate_nodes(
    rng: random.Random,
    sites: list[SiteSpec],
    hosts: dict[str, list[_Host]],
    attempts: list[_Attempt],
    slow_site: str,
    window_start: int,
    n_samples: int,
    pressure: tuple[str, int, int],
) -> list[dict[str, Any]]:
    by_host: dict[str, list[_Attempt]] = {}
    for a in attempts:
        by_host.setdefault(a.host, []).append(a)
    pressure_host, pressure_start, pressure_end = pressure
    records: list[dict[str, Any]] = []
    for site in sites:
        slow = site.name == slow_site
        # Background load: the rest of each node is filled by jobs of the site's usual mix.
        bg_eff = 0.66 if slow else 0.84
        bg_local_io = 0.55 if slow else 0.15  # share of non-CPU time that waits on local disk
        for h_index, host in enumerate(hosts[site.name][:MONITORED_HOSTS_PER_SITE]):
            ncpu = host.ncpu
            scratch = ("sdb", "hdd") if slow else ("nvme0n1", "nvme")
            two_disks = h_index != 0
            mem_total_kb = ncpu * 2 * 1024 * 1024
            alloc = 0.9
            swpd = rng.randrange(0, 200_000)
            jobs_here = by_host.get(host.name, [])
            arch = CPU_MODELS[host.cpu_model][0]
            # the perf record's noise has a generator of its own: the other fields are unchanged
            ipc_rng = random.Random(f"demo-ipc|{host.name}")
            for k in range(n_samples):
                ts = window_start + (k + 1) * NODE_INTERVAL_SECONDS
                t0 = ts - NODE_INTERVAL_SECONDS
                alloc = synth.clip(0.9 + 0.7 * (alloc - 0.9) + rng.gauss(0, 0.02), 0.6, 1.0)
                job_alloc = job_busy = job_wait = 0.0
                busy_by_type: dict[str, float] = {}
                for a in jobs_here:
                    overlap = min(ts, a.end) - max(t0, a.start)
                    if overlap <= 0 or a.end <= a.start:
                        continue
                    frac = overlap / NODE_INTERVAL_SECONDS
                    wall = a.end - a.start
                    used = a.cpu / wall  # cores busy on average (may exceed cores: outliers)
                    job_alloc += a.cores * frac
                    job_busy += used * frac
                    jt = a.record["job_type"]
                    busy_by_type[jt] = busy_by_type.get(jt, 0.0) + used * frac
                    idle = max(0.0, a.cores - used)
                    job_wait += idle * a.io_share * bg_local_io * frac
                bg_alloc = max(0.0, alloc * ncpu - job_alloc)
                busy = job_busy + bg_alloc * bg_eff * rng.uniform(0.95, 1.05)
                wait = job_wait + bg_alloc * (1 - bg_eff) * bg_local_io * rng.uniform(0.8, 1.2)
                swapping = host.name == pressure_host and pressure_start <= t0 < pressure_end
                busy = min(busy, float(ncpu))
                wait = min(wait, ncpu - busy)
                io_level = wait / ncpu  # waiting on the scratch disk
                if swapping:  # memory-bound: processes block on swap, less useful CPU
                    busy *= 0.6
                    wait = min(wait + 0.12 * ncpu, ncpu - busy)
                steal = rng.uniform(0.5, 3.0) if site.virtual else 0.0
                sys_share = 0.07 if slow else 0.05
                us = 100 * busy / ncpu * (1 - sys_share)
                sy = 100 * busy / ncpu * sys_share
                wa = 100 * wait / ncpu
                total_busy = us + sy + wa + steal
                if total_busy > 100:  # keep the percentages a partition of 100
                    scale = 100 / total_busy
                    us, sy, wa, steal = us * scale, sy * scale, wa * scale, steal * scale

                disks = [_disk_sample(rng, scratch[0], scratch[1], io_level, 0.3)]
                if two_disks or swapping:
                    disks.insert(0, _disk_sample(rng, "sda", "sys", io_level, 1.0))
                used_kb = alloc * ncpu * 1.4 * 1024 * 1024
                if swapping:
                    used_kb = mem_total_kb * 1.03
                    swpd = min(swpd + rng.randrange(200_000, 800_000), 16 * 1024 * 1024)
                    si = rng.uniform(300, 4000)
                    so = rng.uniform(500, 6000)
                    swap = disks[0]  # swap lives on the system disk: 4 KiB pages
                    swap["r_s"] = round(swap["r_s"] + si / 4, 2)
                    swap["w_s"] = round(swap["w_s"] + so / 4, 2)
                    swap["rkb_s"] = round(swap["rkb_s"] + si, 1)
                    swap["wkb_s"] = round(swap["wkb_s"] + so, 1)
                    swap["r_await_ms"] = round(rng.uniform(10, 30), 2)
                    swap["w_await_ms"] = round(rng.uniform(15, 40), 2)
                    swap["aqu_sz"] = round(
                        (swap["r_s"] * swap["r_await_ms"] + swap["w_s"] * swap["w_await_ms"])
                        / 1000,
                        2,
                    )
                    swap["util_pct"] = round(synth.clip(60 + rng.gauss(0, 8), 30, 99.9), 1)
                else:
                    swpd = max(0, swpd - rng.randrange(0, 50_000))
                    si = so = 0.0
                resident_kb = min(used_kb, mem_total_kb * 0.97)
                buff_kb = mem_total_kb * rng.uniform(0.005, 0.015)
                avail = max(0.0, mem_total_kb - resident_kb - buff_kb)
                cache_kb = avail * (0.85 if not swapping else 0.3) * rng.uniform(0.95, 1.0)
                free_kb = max(0.0, mem_total_kb - resident_kb - buff_kb - cache_kb)

                us_i, sy_i, wa_i, st_i = round(us), round(sy), round(wa), round(steal)
                id_i = 100 - us_i - sy_i - wa_i - st_i
                if id_i < 0:
                    us_i += id_i
                    id_i = 0
                base = {
                    "site": site.name,
                    "host": host.name,
                    "ts": synth.ts(ts),
                    "interval_seconds": NODE_INTERVAL_SECONDS,
                }
                records.append(
                    {
                        **base,
                        "kind": "vmstat",
                        "r": round(busy * rng.uniform(1.0, 1.1)),
                        "b": round(wait * rng.uniform(0.8, 1.2)),
                        "swpd_kb": swpd,
                        "free_kb": round(free_kb),
                        "buff_kb": round(buff_kb),
                        "cache_kb": round(cache_kb),
                        "si": round(si),
                        "so": round(so),
                        "bi": round(sum(d["rkb_s"] for d in disks)),
                        "bo": round(sum(d["wkb_s"] for d in disks)),
                        "in": round((2000 + 300 * busy) * rng.uniform(0.9, 1.1)),
                        "cs": round(
                            (5000 + 1500 * busy + 20_000 * io_level) * rng.uniform(0.9, 1.1)
                        ),
                        "us": us_i,
                        "sy": sy_i,
                        "id": id_i,
                        "wa": wa_i,
                        "st": st_i,
                    }
                )
                # iostat samples the same interval independently: close, not identical
                c_us = max(0.0, us + rng.gauss(0, 0.5))
                c_sy = max(0.0, sy + rng.gauss(0, 0.2))
                c_wa = max(0.0, wa + rng.gauss(0, 0.3))
                c_st = max(0.0, steal + (rng.gauss(0, 0.1) if site.virtual else 0.0))
                c_idle = max(0.0, 100 - c_us - c_sy - c_wa - c_st)
                records.append(
                    {
                        **base,
                        "kind": "iostat",
                        "cpu_user": round(c_us, 2),
                        "cpu_system": round(c_sy, 2),
                        "cpu_iowait": round(c_wa, 2),
                        "cpu_steal": round(c_st, 2),
                        "cpu_idle": round(c_idle, 2),
                        "disks": disks,
                    }
                )
                records.append({**base, **_perf_fields(site, arch, busy_by_type, ipc_rng)})
    return records


def _perf_fields(
    site: SiteSpec, arch: str, busy_by_type: dict[str, float], rng: random.Random
) -> dict[str, Any]:
    """The host's perf record: on a VM (a virtual site) perf says <not supported>; otherwise the
    recorded jobs' cycles (busy cores x 2.5 GHz) at the simulator's planted IPC of their job
    type on the host's microarchitecture, +-3%. The background load of the node is left out of
    the counters (it has no job records to attribute it to)."""
    if site.virtual:
        return {"kind": "perf", "instructions": None, "cycles": None,
                "counters_available": "not_supported"}  # fmt: skip
    cycles = {jt: busy * CLOCK_HZ * NODE_INTERVAL_SECONDS for jt, busy in busy_by_type.items()}
    instructions = sum(c * planted_ipc(arch, jt) for jt, c in cycles.items())
    instructions *= 1.0 + rng.gauss(0.0, IPC_NOISE)
    return {"kind": "perf", "instructions": round(instructions),
            "cycles": round(sum(cycles.values())), "counters_available": "yes"}  # fmt: skip


# --------------------------------------------------------------------------------------------
# perfSONAR
# --------------------------------------------------------------------------------------------


def _utilisation(ts: int, congested: bool, rng: random.Random) -> float:
    """Link utilisation: daily cycle; the congested link peaks near capacity in busy hours."""
    hour = (ts % 86400) / 3600
    lo, hi = BUSY_HOURS_UTC
    phase = math.sin(math.pi * (hour - lo) / (hi - lo)) if lo <= hour < hi else 0.0
    if congested:  # ramps up over ~2 h, then stays close to capacity
        return synth.clip(0.45 + 0.52 * min(1.0, 2 * phase) + rng.gauss(0, 0.02), 0.0, 0.99)
    return synth.clip(0.25 + 0.3 * phase**2 + rng.gauss(0, 0.05), 0.0, 0.95)


def _generate_network(
    rng: random.Random,
    sites: list[SiteSpec],
    week0: int,
    congested: tuple[str, str],
    latency_interval: int,
) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    week_end = week0 + WEEK_SECONDS
    for src in sites:
        for dst in sites:
            if src.name == dst.name:
                continue
            is_congested = (src.name, dst.name) == congested
            src_host = f"psonar1.{_host_domain(src.name)}"
            dst_host = f"psonar1.{_host_domain(dst.name)}"
            base = synth.base_delay_ms(src.lat, src.lon, dst.lat, dst.lon) + rng.uniform(
                -0.1, 0.3
            )  # asymmetric routes
            transatlantic = abs(src.lon - dst.lon) > 40
            capacity_bps = 100e9 if not transatlantic else 40e9
            if is_congested:  # the planted bottleneck: a 10 Gb/s segment on the path
                capacity_bps = 10e9
            tcp_ceiling = 9.4e9 if not transatlantic else 4.0e9  # one iperf3 stream, long RTT
            path = {
                "src_site": src.name,
                "dst_site": dst.name,
                "src_host": src_host,
                "dst_host": dst_host,
            }
            phase = rng.randrange(latency_interval)
            t = week0 + phase
            packets = LATENCY_PACKETS_PER_SECOND * latency_interval
            while t < week_end:
                ts = min(week_end - 1, max(week0, t + rng.randrange(-30, 31)))
                u = _utilisation(ts, is_congested, rng)
                queue = 40 * max(0.0, u - 0.7) ** 1.5 * (3 if is_congested else 1)
                loss_rate = 0.03 * max(0.0, (u - 0.75) / 0.25) ** 2 + 2e-6
                lost = synth.poisson(rng, loss_rate * packets)
                d_min = base + rng.uniform(0.0, 0.05)
                d_median = d_min + rng.uniform(0.03, 0.2) + 0.8 * queue
                d_mean = d_median + rng.uniform(0.0, 0.1) + 0.3 * queue
                records.append(
                    {
                        **path,
                        "ts": synth.ts(ts),
                        "test": "latency",
                        "delay_mean_ms": round(d_mean, 3),
                        "delay_median_ms": round(d_median, 3),
                        "delay_min_ms": round(d_min, 3),
                        "delay_sd_ms": round(rng.uniform(0.02, 0.15) + 0.5 * queue, 3),
                        "packet_loss": round(min(1.0, lost / packets), 7),
                        "throughput_bps": None,
                        "retransmits": None,
                        "tool": "owping",
                    }
                )
                t += latency_interval
            t = week0 + rng.randrange(THROUGHPUT_INTERVAL_SECONDS)
            while t < week_end:
                u = _utilisation(t, is_congested, rng)
                spare = max(0.01, 1 - u) * capacity_bps
                bps = min(tcp_ceiling * rng.uniform(0.6, 0.98), spare * rng.uniform(0.7, 0.95))
                retrans = synth.poisson(rng, 40) + (
                    synth.poisson(rng, 20_000 * max(0.0, u - 0.75)) if u > 0.75 else 0
                )
                records.append(
                    {
                        **path,
                        "ts": synth.ts(t),
                        "test": "throughput",
                        "delay_mean_ms": None,
                        "delay_median_ms": None,
                        "delay_min_ms": None,
                        "delay_sd_ms": None,
                        "packet_loss": None,
                        "throughput_bps": round(bps, -3),
                        "retransmits": retrans,
                        "tool": "iperf3",
                    }
                )
                t += THROUGHPUT_INTERVAL_SECONDS
    return records


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def generate_week(
    week_start: date, seed: int = 7, sites: int = 4, jobs_per_site: int = 300
) -> DemoWeek:
    """One ISO week (Monday 00:00 to next Monday 00:00 UTC) of demo records.

    ``week_start`` may be any day: the week is the ISO week containing it. ``sites`` takes the
    first N of ``SITES`` (2 to 6); ``jobs_per_site`` counts first attempts, retries come on top.
    """
    if not 2 <= sites <= len(SITES):
        raise ValueError(f"sites must be between 2 and {len(SITES)}, not {sites}")
    if jobs_per_site < 1:
        raise ValueError("jobs_per_site must be positive")
    monday = week_start - timedelta(days=week_start.weekday())
    week0 = synth.epoch(monday)
    rng = random.Random(f"gridlake-demo:{seed}")
    chosen = list(SITES[:sites])
    slow_site = chosen[2].name if sites > 2 else chosen[-1].name
    congested = (chosen[0].name, chosen[1].name)
    targets = _efficiency_targets(chosen, slow_site)

    hosts = _make_hosts(rng, chosen)
    attempts, outlier_ids = _generate_jobs(
        rng, chosen, hosts, targets, slow_site, week0, jobs_per_site
    )

    # Node samples over part of the week (from Wednesday 00:00), within the record budget.
    per_host = NODE_RECORD_BUDGET // (sites * MONITORED_HOSTS_PER_SITE * 2)
    n_samples = min(288, per_host)
    window_start = week0 + 2 * 86400
    window_end = window_start + n_samples * NODE_INTERVAL_SECONDS
    pressure_host = hosts[chosen[1].name if chosen[1].name != slow_site else chosen[0].name][1]
    pressure = (pressure_host.name, window_start + 6 * 3600, window_start + 9 * 3600)
    nodes = _generate_nodes(
        rng, chosen, hosts, attempts, slow_site, window_start, n_samples, pressure
    )

    pairs = sites * (sites - 1)
    latency_interval = 20 * 60 if pairs <= 12 else 30 * 60
    network = _generate_network(rng, chosen, week0, congested, latency_interval)

    jobs = sorted((a.record for a in attempts), key=lambda r: (r["end_time"], r["job_id"]))
    nodes.sort(key=lambda r: (r["ts"], r["host"], r["kind"]))
    network.sort(key=lambda r: (r["ts"], r["src_host"], r["dst_host"], r["test"]))

    truth: dict[str, Any] = {
        "seed": seed,
        "week_start": monday.isoformat(),
        "week_end_exclusive": (monday + timedelta(days=7)).isoformat(),
        "iso_week": f"{monday.isocalendar()[0]}-W{monday.isocalendar()[1]:02d}",
        "sites": [s.name for s in chosen],
        "jobs_per_site_first_attempts": jobs_per_site,
        "job_mix_target": {t: round(s.share, 4) for t, s in JOB_TYPE_SPECS.items()},
        "slow_storage_site": slow_site,
        "slow_storage_efficiency_factor": {
            t: s.slow_storage_factor for t, s in JOB_TYPE_SPECS.items()
        },
        "efficiency_target": targets,
        "multicore_efficiency_factor": MULTICORE_EFFICIENCY_FACTOR,
        "reference_cpu_model": REFERENCE_CPU_MODEL,
        "ipc": {  # planted in the perf records of hosts outside the virtual sites
            arch: {jt: planted_ipc(arch, jt) for jt in JOB_TYPES}
            for arch in sorted({m[0] for m in CPU_MODELS.values()})
        },
        "cpu_models": {
            m: {"microarchitecture": arch, "ncpu": n, "hs23_per_core": hs}
            for m, (arch, n, hs) in CPU_MODELS.items()
        },
        "hs23_speed_factor": {m: round(hs23_speed_factor(m), 4) for m in CPU_MODELS},
        "speed_factor": {
            m: {t: round(speed_factor(m, t), 4) for t in JOB_TYPES} for m in CPU_MODELS
        },
        "host_cpu_model": {h.name: h.cpu_model for hs in hosts.values() for h in hs},
        "failure_exit_codes": EXIT_CODES,
        "outlier_job_ids": outlier_ids,
        "monitored_hosts": {
            s.name: [h.name for h in hosts[s.name][:MONITORED_HOSTS_PER_SITE]] for s in chosen
        },
        "node_window": {"start": synth.ts(window_start), "end": synth.ts(window_end)},
        "memory_pressure": {
            "host": pressure[0],
            "start": synth.ts(pressure[1]),
            "end": synth.ts(pressure[2]),
        },
        "congested_path": {
            "src_site": congested[0],
            "dst_site": congested[1],
            "src_host": f"psonar1.{_host_domain(congested[0])}",
            "dst_host": f"psonar1.{_host_domain(congested[1])}",
            "busy_hours_utc": list(BUSY_HOURS_UTC),
        },
        "latency_interval_seconds": latency_interval,
        "throughput_interval_seconds": THROUGHPUT_INTERVAL_SECONDS,
        "counts": {"jobs": len(jobs), "nodes": len(nodes), "network": len(network)},
    }
    return DemoWeek(jobs=jobs, nodes=nodes, network=network, truth=truth)


def write_week(out_dir: Path, week: DemoWeek) -> dict[str, Path]:
    """Write ``jobs.jsonl``, ``nodes.jsonl``, ``network.jsonl`` (one object a line, sorted keys)
    and ``truth.json`` into ``out_dir``; return the paths by name."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for name in ("jobs", "nodes", "network"):
        path = out_dir / f"{name}.jsonl"
        with path.open("w", encoding="utf-8", newline="\n") as fh:
            for record in getattr(week, name):
                fh.write(synth.dumps(record, sort_keys=True) + "\n")
        paths[name] = path
    truth_path = out_dir / "truth.json"
    truth_path.write_text(
        json.dumps(week.truth, sort_keys=True, indent=2, allow_nan=False) + "\n", encoding="utf-8"
    )
    paths["truth"] = truth_path
    return paths
