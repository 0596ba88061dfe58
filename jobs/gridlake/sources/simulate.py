"""``gridlake simulate``: a calibrated grid whose answers are known.

A streaming generator of canonical ``grid.jobs``, ``grid.nodes`` and ``grid.network`` messages
for N sites, M CPU models (real names and HS23 per core from the HEPiX-derived reference table,
``jobs/gridlake/reference/cpu_models.csv``) and a date range, plus ``truth.json`` with every planted
quantity, ``job_truth.csv`` (one row per emitted job attempt: its planted signature, true speed,
planted efficiency) and ``link_truth.csv`` (the planted utilisation of every network path at
every latency sample). Same arguments and seed, same bytes.

The model (calibrated on ``domain.md``)
----------------------------------------
- Worker nodes are 8-core job slots (as a pilot sees them). Each host runs, back to back,
  *occupations*: a job type and task are drawn, and ``8 // cores`` attempts of that task start
  together (eight 1-core analysis jobs, two 4-core reprocessing jobs, one 8-core simul job). A
  failed attempt is retried (``retry_of``) in its lane after a short gap. The occupation ends
  when its last lane ends. Occupation weights are chosen so the job mix *by count* follows
  ``domain.md`` (analysis 49%, evgen 11%, merge+pmerge 12%, simul 7%, reprocessing 4%, pile 4%);
  the wall-clock mix follows from the durations (simulation dominates).
- A task has one job type, VO, core count, CPU time per event (on a core of speed 1.0, i.e.
  HS23 10 per core) and a planned payload duration; its jobs are spread over hosts and sites, so
  every task runs on several CPU models. Events vary +-40% between jobs of a task.
- True CPU speed of a model for a job type = HS23 per core / 10 x a small workload deviation
  (+-2%, so job types agree within a few percent), except Geant4 simulation on Ivy Bridge: 0.78
  (the IPC table: simulation gains ~50% on Haswell where HS06 says ~10%). The misconfigured site's
  nodes run at ``MISCONFIGURED_SPEED`` of their declared benchmark for every job type.
- Payload CPU efficiency of a job = job type base x site factor x Amdahl parallel efficiency
  ``1 / (1 + s (n - 1))`` x noise. Planted site effects: slow storage (I/O-heavy types pile,
  reprocessing, merge at ``SLOW_STORAGE_FACTOR``: io_wait_bound), memory-restricted nodes (pile
  swaps: ``MEMORY_BOUND_FACTOR``, memory_bound), a diskless site whose analysis reads remotely
  (``REMOTE_READ_FACTOR``, remote_read_bound). Memory: base + 200 MB per extra thread.
- Every attempt spends an initialisation overhead (job type mean on the reference model x its
  speed ratio +-20%, every allocated core half busy: initialisation is work that takes 1/speed
  too, so CPU time per event scales with 1/speed as a whole), then its payload. Failures: at
  the start with a fixed probability (``stage-in``, doubled at the slow storage site), and
  during the attempt at a constant hazard per hour by job type
  and mode (``app-crash``, ``lost-heartbeat``, ``memory``). So an optimal job length exists; the
  truth file has it for each job type (``useful_fraction`` below is the model).
- A planted signature per attempt: ``init_dominated`` when the initialisation is at least half
  of its wall-clock, else the site effect that applies, else ``cpu_bound``.
- Node samples (vmstat and iostat, every ``node_interval`` seconds) on the monitored hosts of each
  site follow the attempts running on them: user CPU from their efficiency, iowait and blocked
  processes from their waiting share, disk utilisation and await saturated at the slow storage
  site, swap-in/out and a shrinking page cache on the memory-restricted nodes.
- perfSONAR: latency/loss every ``latency_interval`` seconds per ordered site pair and throughput
  every ``throughput_interval``; a planted utilisation series per path (daily cycle, AR(1) noise,
  congestion episodes on chosen paths where delay and loss rise past ~80%), a latency spike on
  the incoming links of one site at the same hours of chosen days every week (``spike_days``,
  the weekend by default), a path whose source clock drifts, one complete-loss
  outage and a throughput drop.
- Optional planted bad records (``bad_share``: jobs, node samples and network results) with the
  rule the silver layer must quarantine them for, and re-sent duplicates (``resend_share``) that
  silver must absorb.
- The true cost of an event of each job type at each site (``true_cost`` in the truth file,
  ``true_costs``): computed from the planted quantities after the run, without random draws, so
  the records are the same with or without it.
"""

from __future__ import annotations

import calendar
import csv
import json
import math
import random
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from gridlake.reference.cpu_models import reference_rows
from gridlake.sources import synth

# --------------------------------------------------------------------------------------------
# Planted model constants
# --------------------------------------------------------------------------------------------

SLOT_CORES = 8
HS23_UNIT = 10.0  # a core of speed 1.0 scores HS23 10
JOBS_PER_TASK = 40
PILOT_GAP_SECONDS = (30, 300)
RETRY_PROBABILITY = 0.8
MAX_ATTEMPTS = 3
OUTLIER_SHARE = 0.003  # 1-core jobs whose CPU time exceeds wall x cores (extra threads)

# The slow-storage site is the grid's worst place for I/O-heavy work (pile, reprocessing, merge):
# its factor is below the memory-restricted site's, whose pile swaps but whose storage is fine.
SLOW_STORAGE_FACTOR = 0.45
MEMORY_BOUND_FACTOR = 0.70
REMOTE_READ_FACTOR = 0.55
MISCONFIGURED_SPEED = 0.82
MISLEADING_MICROARCH = "Ivy Bridge"
MISLEADING_JOB_TYPE = "simul"
MISLEADING_DEVIATION = 0.78
DEVIATION_SPREAD = 0.02
INIT_CPU_SHARE = 0.5  # CPU efficiency of the initialisation on every allocated core (it waits
# on software and conditions loading); the same for any core count, so Amdahl applies to the payload

SIGNATURES = ("cpu_bound", "io_wait_bound", "memory_bound", "remote_read_bound", "init_dominated")
# Share of a job's non-CPU core time that shows as iowait on the node, by signature.
IOWAIT_SHARE = {
    "cpu_bound": 0.10,
    "io_wait_bound": 0.85,
    "memory_bound": 0.35,
    "remote_read_bound": 0.02,
    "init_dominated": 0.10,
}
# Network KiB/s a running job makes its host receive, by signature: a remote-read-bound job
# streams its input over the network (xrootd / HTTP), the others read locally or little.
NET_RX_KBS = {"remote_read_bound": 12_000.0}
NET_RX_KBS_OTHER = 60.0
# Instructions per cycle by job type on Haswell and Ivy Bridge: seed 003's measurements
# (domain.md) for the four job types it measured; merge and analysis (not measured, I/O-heavy
# and interpreted code) are planted lower. Other microarchitectures: Haswell's figure times a
# fixed factor of the microarchitecture (planted_ipc).
IPC_TABLE = {
    "evgen": (1.59, 1.58),  # CMS Gen
    "simul": (1.43, 0.92),  # ATLAS Sim 19.2 (Geant4: ~50% faster on Haswell)
    "pile": (1.66, 1.53),  # CMS Digi+HLT
    "reprocessing": (1.55, 1.40),  # CMS Reco
    "merge": (1.05, 0.98),
    "analysis": (1.25, 1.12),
}
IPC_NOISE = 0.03  # relative, per host sample
CLOCK_HZ = 2.5e9
VM_HOST_SHARE = 10  # one monitored host in ten is a VM: perf says <not supported>


@dataclass(frozen=True)
class JobTypeSpec:
    count_share: float  # share of jobs by count (domain.md)
    cores: tuple[tuple[int, float], ...]  # (cores, weight) per task
    payload_hours: tuple[float, float]  # planned payload duration per task, log-uniform
    cpu_per_event: tuple[float, float]  # seconds per event on a speed-1.0 core, log-uniform
    efficiency: float  # payload CPU efficiency of a 1-core job at an unaffected site
    serial_fraction: float  # Amdahl s
    init_seconds: float  # mean initialisation overhead on the reference CPU model
    hazards: dict[str, float]  # failure hazard per hour during the attempt, by mode
    stage_in_failure: float  # probability per attempt, at the start
    rss_base_mb: float  # 1-core RSS; +200 MB per extra thread
    input_mb_per_event: float
    output_mb_per_event: float
    system_fraction: float
    io_heavy: bool  # suffers at the slow-storage site

    @property
    def hazard_per_hour(self) -> float:
        return sum(self.hazards.values())


JOB_TYPES: dict[str, JobTypeSpec] = {
    "evgen": JobTypeSpec(11 / 87, ((1, 0.8), (8, 0.2)), (1.0, 16.0), (2.0, 20.0), 0.95, 0.02,
                         300, {"app-crash": 0.004, "lost-heartbeat": 0.002}, 0.005, 900, 0.0,
                         0.05, 0.02, False),
    "simul": JobTypeSpec(7 / 87, ((1, 0.2), (4, 0.2), (8, 0.6)), (2.0, 20.0), (100.0, 400.0),
                         0.93, 0.01, 600, {"app-crash": 0.006, "lost-heartbeat": 0.003}, 0.02,
                         1800, 0.3, 1.0, 0.02, False),
    "pile": JobTypeSpec(4 / 87, ((2, 0.15), (4, 0.3), (8, 0.55)), (1.0, 10.0), (20.0, 60.0),
                        0.80, 0.02, 900,
                        {"app-crash": 0.008, "lost-heartbeat": 0.004, "memory": 0.002}, 0.03,
                        2600, 3.0, 0.6, 0.06, True),
    "reprocessing": JobTypeSpec(4 / 87, ((1, 0.2), (4, 0.3), (8, 0.5)), (1.0, 8.0),
                                (10.0, 30.0), 0.82, 0.008, 600,
                                {"app-crash": 0.008, "lost-heartbeat": 0.004}, 0.03, 2400, 1.0,
                                0.5, 0.05, True),
    "merge": JobTypeSpec(12 / 87, ((1, 1.0),), (0.05, 1.5), (0.005, 0.03), 0.75, 0.0, 240,
                         {"app-crash": 0.015, "lost-heartbeat": 0.01}, 0.02, 700, 0.25, 0.25,
                         0.15, True),
    "analysis": JobTypeSpec(49 / 87, ((1, 1.0),), (0.05, 6.0), (0.01, 0.2), 0.78, 0.0, 300,
                            {"app-crash": 0.02, "lost-heartbeat": 0.01}, 0.03, 1500, 0.08, 0.005,
                            0.05, False),
}  # fmt: skip
START_FAILURE_MODES = ("stage-in",)
EXIT_CODES = {"stage-in": 66, "lost-heartbeat": 143, "memory": 137, "app-crash": 139}
# What each planted failure mode is (the truth gold.failure_causes_weekly must recover)
PLANTED_CAUSES = {
    None: "success",
    "stage-in": "input_read_failure",
    "lost-heartbeat": "node_or_infrastructure",
    "memory": "memory_exceeded",
    "app-crash": "application_error",
}
ATLAS_SHARE = 0.7

# Real site names (WLCG Tier-0/1/2) and coordinates for path delays; more sites get generated names.
SITE_NAMES: tuple[tuple[str, float, float], ...] = (
    ("CERN-PROD", 46.23, 6.05), ("BNL-ATLAS", 40.87, -72.88), ("FZK-LCG2", 49.10, 8.43),
    ("RAL-LCG2", 51.57, -1.31), ("IN2P3-CC", 45.78, 4.87), ("PIC", 41.50, 2.11),
    ("TRIUMF-LCG2", 49.25, -123.23), ("INFN-T1", 44.49, 11.34), ("SARA-MATRIX", 52.36, 4.95),
    ("NDGF-T1", 55.70, 12.56), ("Taiwan-LCG2", 25.04, 121.61), ("USCMS-FNAL-WC1", 41.84, -88.26),
    ("AGLT2", 42.28, -83.74), ("MWT2", 41.79, -87.60), ("DESY-HH", 53.58, 9.88),
    ("UKI-NORTHGRID-MAN-HEP", 53.47, -2.23), ("praguelcg2", 50.12, 14.47),
    ("JINR-T1", 56.74, 37.19),
)  # fmt: skip
# Roles of the planted sites, by index into the chosen sites (needs >= 6 sites with effects).
ROLE_INDEX = {
    "slow_storage_site": 2,
    "memory_restricted_site": 3,
    "misconfigured_site": 4,
    "remote_read_site": 5,
    "recurring_spike_site": 1,
}

# perfSONAR
LATENCY_PACKETS_PER_SECOND = 10
CONGESTION_ONSET = 0.8
WEEKEND_SPIKE_MS = 8.0
WEEKEND_SPIKE_HOURS_UTC = (12, 18)
CLOCK_DRIFT_MS_PER_DAY = -1.5
THROUGHPUT_DROP_FACTOR = 0.3


# --------------------------------------------------------------------------------------------
# Model functions (also used by tests and by the truth file)
# --------------------------------------------------------------------------------------------


def planted_ipc(microarchitecture: str, job_type: str) -> float:
    """The IPC the simulator plants for a job type on a microarchitecture."""
    haswell, ivy = IPC_TABLE[job_type]
    if microarchitecture == "Haswell":
        return haswell
    if microarchitecture == "Ivy Bridge":
        return ivy
    scale = 0.85 + 0.4 * zlib.crc32(microarchitecture.encode()) / 2**32
    return round(haswell * scale, 4)


def has_counters(host: str) -> bool:
    """Whether a simulated host exposes hardware counters (one in VM_HOST_SHARE is a VM)."""
    return zlib.crc32(host.encode()) % VM_HOST_SHARE != 0


def amdahl_parallel_efficiency(cores: int, serial_fraction: float) -> float:
    """speedup(n) / n with speedup(n) = 1 / (s + (1 - s) / n)."""
    return 1.0 / (1.0 + serial_fraction * (cores - 1))


def useful_fraction(payload_hours: float, init_seconds: float, hazard_per_hour: float) -> float:
    """Useful payload wall-clock per wall-clock spent, for a planned payload duration T.

    An attempt spends I (initialisation) then T; a failure at constant hazard h per hour over
    I + T loses the attempt. U(T) = T exp(-h (I + T)) / E[wall], E[wall] = (1 - exp(-h (I+T))) / h.
    """
    t, i, h = payload_hours, init_seconds / 3600.0, hazard_per_hour
    if h <= 0:
        return t / (i + t)
    total = i + t
    return t * math.exp(-h * total) * h / -math.expm1(-h * total)


def optimal_payload_hours(init_seconds: float, hazard_per_hour: float) -> float:
    """The planned payload duration maximising ``useful_fraction`` (golden-section on log T)."""
    lo, hi = math.log(1 / 60), math.log(1000.0)
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa = useful_fraction(math.exp(a), init_seconds, hazard_per_hour)
    fb = useful_fraction(math.exp(b), init_seconds, hazard_per_hour)
    for _ in range(200):
        if fa < fb:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = useful_fraction(math.exp(b), init_seconds, hazard_per_hour)
        else:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = useful_fraction(math.exp(a), init_seconds, hazard_per_hour)
    return math.exp((lo + hi) / 2)


# --------------------------------------------------------------------------------------------
# Configuration and grid
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SimConfig:
    start: date
    days: int = 7
    sites: int = 8
    cpu_models: int = 12
    jobs: int = 20_000  # target number of first attempts (the last host finishes its range)
    seed: int = 1
    effects: bool = True  # False: a clean control grid (no planted site or network effects)
    monitored_hosts_per_site: int = 2
    node_interval: int = 60
    latency_interval: int = 60
    throughput_interval: int = 4 * 3600
    bad_share: float = 0.0
    resend_share: float = 0.0
    # Days of the week (Monday = 0) on which every incoming link of the recurring-spike site is
    # slower by WEEKEND_SPIKE_MS during WEEKEND_SPIKE_HOURS_UTC; () plants none.
    spike_days: tuple[int, ...] = (5, 6)

    def validate(self) -> None:
        if self.days < 1:
            raise ValueError("days must be >= 1")
        if self.effects and self.sites < 6:
            raise ValueError("planted effects need at least 6 sites (or pass effects=False)")
        if self.sites < 2:
            raise ValueError("sites must be >= 2")
        if self.cpu_models < 3:
            raise ValueError("cpu_models must be >= 3")
        if self.jobs < 1:
            raise ValueError("jobs must be >= 1")
        for name in ("node_interval", "latency_interval", "throughput_interval"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1 second")
        if any(d not in range(7) for d in self.spike_days):
            raise ValueError("spike_days are days of the week, Monday = 0 to Sunday = 6")


@dataclass(frozen=True)
class CpuModel:
    name: str
    microarchitecture: str
    vendor: str
    hs23_per_core: float
    deviation: dict[str, float]  # true speed / benchmark-predicted speed, by job type

    def speed(self, job_type: str) -> float:
        return self.hs23_per_core / HS23_UNIT * self.deviation[job_type]


@dataclass
class Site:
    name: str
    lat: float
    lon: float
    vos: tuple[str, ...]
    weight: float  # relative size (hosts)
    efficiency_factor: float
    speed_factor: float  # 1.0, or MISCONFIGURED_SPEED
    fleet: list[tuple[int, float]]  # (cpu model index, weight)
    roles: tuple[str, ...] = ()
    hosts: int = 0

    @property
    def domain(self) -> str:
        return self.name.lower().replace("_", "-") + ".example.org"


@dataclass(frozen=True)
class Task:
    task_id: str
    vo: str
    job_type: str
    cores: int
    cpu_per_event: float
    events: int


@dataclass
class Grid:
    config: SimConfig
    models: list[CpuModel]
    sites: list[Site]
    tasks: dict[tuple[str, str], list[Task]]
    roles: dict[str, str]
    range_start: int
    range_end: int


def _choose_models(rng: random.Random, n: int) -> list[CpuModel]:
    """n real x86 models with an HS23 figure; the first is a Haswell (the common, reference-like
    model), one Ivy Bridge is always included (the benchmark-misleading one for simulation)."""
    rows = sorted(
        (r for r in reference_rows().values() if r.hs23_per_core and r.vendor in ("Intel", "AMD")),
        key=lambda r: r.cpu_model_norm,
    )
    haswell = [r for r in rows if r.microarchitecture == "Haswell"]
    ivy = [r for r in rows if r.microarchitecture == MISLEADING_MICROARCH]
    first = [rng.choice(haswell), rng.choice(ivy)]
    rest = [r for r in rows if r not in first]
    rng.shuffle(rest)
    chosen = (first + rest)[: min(n, len(rows))]
    models = []
    for r in chosen:
        dev = {}
        for jt in JOB_TYPES:
            if r.microarchitecture == MISLEADING_MICROARCH and jt == MISLEADING_JOB_TYPE:
                dev[jt] = MISLEADING_DEVIATION
            else:
                dev[jt] = round(rng.uniform(1 - DEVIATION_SPREAD, 1 + DEVIATION_SPREAD), 4)
        assert r.hs23_per_core is not None
        models.append(
            CpuModel(r.cpu_model_example, r.microarchitecture, r.vendor, r.hs23_per_core, dev)
        )
    return models


def build_grid(config: SimConfig) -> tuple[Grid, random.Random]:
    config.validate()
    rng = random.Random(f"gridlake-simulate:{config.seed}")
    models = _choose_models(rng, config.cpu_models)
    m = len(models)
    sites: list[Site] = []
    fleet_size = max(3, math.ceil(2.5 * m / config.sites))
    for i in range(config.sites):
        if i < len(SITE_NAMES):
            name, lat, lon = SITE_NAMES[i]
        else:
            name, lat, lon = f"SIM-SITE-{i:03d}", rng.uniform(-40, 60), rng.uniform(-120, 140)
        vos = ("atlas",) if i % 4 == 1 else ("atlas", "cms")
        # every site has model 0 (the common Haswell); the others rotate so each model is at
        # two or more sites and tasks link them all into one connected group
        others = [1 + ((i * (fleet_size - 1) + k) % (m - 1)) for k in range(fleet_size - 1)]
        fleet = [(0, 2.0)] + [(j, 1.0) for j in dict.fromkeys(others)]
        sites.append(
            Site(
                name, lat, lon, vos,
                weight=rng.uniform(0.6, 1.6),
                efficiency_factor=round(rng.uniform(0.98, 1.02), 4),
                speed_factor=1.0,
                fleet=fleet,
            )
        )  # fmt: skip
    roles: dict[str, str] = {}
    if config.effects:
        for role, idx in ROLE_INDEX.items():
            roles[role] = sites[idx].name
            sites[idx].roles = (*sites[idx].roles, role)
        sites[ROLE_INDEX["misconfigured_site"]].speed_factor = MISCONFIGURED_SPEED

    tasks: dict[tuple[str, str], list[Task]] = {}
    serial = 0
    for jt, spec in JOB_TYPES.items():
        for vo in ("atlas", "cms"):
            share = ATLAS_SHARE if vo == "atlas" else 1 - ATLAS_SHARE
            n_tasks = max(3, round(config.jobs * spec.count_share * share / JOBS_PER_TASK))
            for _ in range(n_tasks):
                serial += 1
                cores = synth.pick(rng, spec.cores)
                cpe = synth.loguniform(rng, *spec.cpu_per_event)
                hours = synth.loguniform(rng, *spec.payload_hours)
                eff = spec.efficiency * amdahl_parallel_efficiency(cores, spec.serial_fraction)
                events = max(1, round(hours * 3600 * cores * eff / cpe))
                tid = f"sim{config.seed}-{vo}-{jt}-{serial:06d}"
                tasks.setdefault((vo, jt), []).append(Task(tid, vo, jt, cores, cpe, events))
    start = synth.epoch(config.start)
    grid = Grid(config, models, sites, tasks, roles, start, start + config.days * 86400)
    return grid, rng


def site_efficiency_factor(site: Site, job_type: str, vo: str) -> tuple[float, str]:
    """Planted payload-efficiency factor of a site for a job type, and the planted signature."""
    spec = JOB_TYPES[job_type]
    factor, signature = site.efficiency_factor, "cpu_bound"
    if "slow_storage_site" in site.roles and spec.io_heavy:
        factor, signature = factor * SLOW_STORAGE_FACTOR, "io_wait_bound"
    elif "memory_restricted_site" in site.roles and job_type == "pile":
        factor, signature = factor * MEMORY_BOUND_FACTOR, "memory_bound"
    elif "remote_read_site" in site.roles and job_type == "analysis":
        factor, signature = factor * REMOTE_READ_FACTOR, "remote_read_bound"
    return factor, signature


# --------------------------------------------------------------------------------------------
# Jobs and node samples, host by host
# --------------------------------------------------------------------------------------------


@dataclass
class _Run:
    """One attempt on a host, kept while the host's node samples are drawn."""

    start: int
    init_end: int
    end: int
    cores: int
    eff: float
    signature: str
    system_fraction: float
    read_kbs: float
    job_type: str = ""


@dataclass
class _Sums:
    jobs: int = 0
    failed: int = 0
    core_seconds: float = 0.0
    cpu_seconds: float = 0.0
    good_cpu_seconds: float = 0.0
    events: int = 0

    def add(self, rec: dict[str, Any]) -> None:
        self.jobs += 1
        core_s = rec["wall_seconds"] * rec["cores"]
        cpu = rec["cpu_user_seconds"] + rec["cpu_system_seconds"]
        self.core_seconds += core_s
        self.cpu_seconds += cpu
        if rec["status"] == "failed":
            self.failed += 1
        else:
            self.good_cpu_seconds += cpu
            self.events += rec["events"] or 0


@dataclass
class _Writers:
    jobs: TextIO
    nodes: TextIO
    network: TextIO
    job_truth: Any  # csv.writer
    link_truth: Any


@dataclass
class Simulation:
    """Runs the model; ``run`` streams records into the writers and returns the truth."""

    grid: Grid
    rng: random.Random
    progress: bool = True
    sums: dict[tuple[str, str, str, str], _Sums] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    bad_records: list[dict[str, str]] = field(default_factory=list)
    signature_counts: dict[str, int] = field(default_factory=dict)
    cause_counts: dict[tuple[str, str, str], int] = field(default_factory=dict)
    init_sums: dict[str, list[float]] = field(default_factory=dict)  # job type: [sum, count]
    serial: int = 0
    first_attempts: int = 0
    # hosts per (site, CPU model name): the planted CPU mix of each site (truth only)
    host_models: dict[str, dict[str, int]] = field(default_factory=dict)
    _bar: Any = None

    # -- jobs ---------------------------------------------------------------------------------

    def _attempt(
        self, host: str, site: Site, model: CpuModel, task: Task, t0: int, attempt: int,
        base_id: str, retry_of: str | None, events: int,
    ) -> tuple[dict[str, Any], _Run, dict[str, Any]]:  # fmt: skip
        rng = self.rng
        spec = JOB_TYPES[task.job_type]
        n = task.cores
        factor, signature = site_efficiency_factor(site, task.job_type, task.vo)
        eff = spec.efficiency * factor * amdahl_parallel_efficiency(n, spec.serial_fraction)
        eff = synth.clip(eff * math.exp(rng.gauss(0, 0.02)), 0.02, 0.99)
        speed = model.speed(task.job_type) * site.speed_factor
        payload_cpu = events * task.cpu_per_event / speed * math.exp(rng.gauss(0, 0.03))
        payload_wall = payload_cpu / (n * eff)
        # Initialisation is work too: it takes 1/speed like the payload (its CPU share stays
        # INIT_CPU_SHARE), so a job's CPU time per event scales with 1/speed as a whole, the
        # model the speed-factor fit assumes. init_seconds is its mean on the reference model.
        init = spec.init_seconds * self.grid.models[0].speed(task.job_type) / speed
        init *= rng.uniform(0.8, 1.2)
        stage_p = spec.stage_in_failure * (2 if "slow_storage_site" in site.roles else 1)

        failure: str | None = None
        if rng.random() < stage_p:
            failure = "stage-in"
            t_end = init * rng.uniform(0.2, 1.0)
        else:
            t_end = init + payload_wall
            h = spec.hazard_per_hour
            t_fail = rng.expovariate(h) * 3600 if h > 0 else math.inf
            if t_fail < t_end:
                t_end = t_fail
                failure = synth.pick(rng, list(spec.hazards.items()))
        wall = max(1, math.ceil(t_end))
        init_part = min(wall, init)
        payload_part = max(0.0, wall - init)
        cpu = INIT_CPU_SHARE * n * init_part + (
            payload_cpu * min(1.0, payload_part / payload_wall) if failure != "stage-in" else 0.0
        )
        outlier = n == 1 and failure is None and rng.random() < OUTLIER_SHARE
        if outlier:
            cpu *= rng.uniform(1.5, 3.0)
        if init_part >= 0.5 * wall:
            signature = "init_dominated"
        system = cpu * spec.system_fraction * rng.uniform(0.8, 1.2)
        start, end = t0, t0 + wall
        rss = (spec.rss_base_mb + 200 * (n - 1)) * rng.uniform(0.9, 1.1)
        frac = min(1.0, payload_part / payload_wall) if failure != "stage-in" else 0.0
        read_bytes = int(events * frac * spec.input_mb_per_event * 1e6)
        job_id = base_id if attempt == 1 else f"{base_id}.{attempt}"
        rec = {
            "job_id": job_id,
            "attempt": attempt,
            "retry_of": retry_of,
            "vo": task.vo,
            "site": site.name,
            "host": host,
            "queue": f"{site.name}_{'MCORE' if n > 1 else 'SCORE'}",
            "task_id": task.task_id,
            "job_type": task.job_type,
            "cpu_model": model.name,
            "cores": n,
            "submit_time": synth.ts(start - int(rng.expovariate(1 / 1800))),
            "start_time": synth.ts(start),
            "end_time": synth.ts(end),
            "wall_seconds": wall,
            "cpu_user_seconds": round(cpu - system, 2),
            "cpu_system_seconds": round(system, 2),
            "events": events if failure is None else None,
            "max_rss_mb": round(rss, 1),
            "input_bytes": read_bytes,
            "output_bytes": int(events * spec.output_mb_per_event * 1e6) if failure is None else 0,
            "read_time_seconds": round(payload_part * (1 - eff) * 0.5, 1),
            "status": "success" if failure is None else "failed",
            "exit_code": 0 if failure is None else EXIT_CODES[failure],
            "failure_mode": failure,
            "benchmark_type": "hs23",
            "benchmark_per_core": model.hs23_per_core,
            "source_format": "canonical",
        }
        run = _Run(
            start,
            start + math.ceil(init_part),
            end,
            n,
            eff,
            signature,
            spec.system_fraction,
            read_bytes / 1024 / max(1.0, payload_part),
            task.job_type,
        )
        truth = {
            "job_id": job_id,
            "signature": signature,
            "true_speed": round(speed, 6),
            "planted_efficiency": round(eff, 6),
            "init_seconds": round(init, 1),
            "outlier": int(outlier),
        }
        return rec, run, truth

    def _emit_job(self, w: _Writers, rec: dict[str, Any], truth: dict[str, Any]) -> None:
        g = self.grid
        if rec["end_time"] >= synth.ts(g.range_end):
            return
        bad = g.config.bad_share > 0 and self.rng.random() < g.config.bad_share
        if bad:
            rec, rule = self._corrupt_job(rec)
            self.bad_records.append({"topic": "grid.jobs", "key": rec["job_id"], "rule": rule})
            w.jobs.write(synth.dumps(rec) + "\n")
            self.counts["bad_jobs"] = self.counts.get("bad_jobs", 0) + 1
            return
        w.jobs.write(synth.dumps(rec) + "\n")
        if g.config.resend_share > 0 and self.rng.random() < g.config.resend_share:
            w.jobs.write(synth.dumps(rec) + "\n")
            self.counts["resent_jobs"] = self.counts.get("resent_jobs", 0) + 1
        self.counts["jobs"] = self.counts.get("jobs", 0) + 1
        if rec["attempt"] == 1:
            self.first_attempts += 1
        week = _iso_monday(rec["end_time"])
        for jt in (rec["job_type"], "ALL"):
            key = (week, rec["site"], rec["vo"], jt)
            self.sums.setdefault(key, _Sums()).add(rec)
        sig = truth["signature"]
        self.signature_counts[sig] = self.signature_counts.get(sig, 0) + 1
        cause = (week, rec["site"], PLANTED_CAUSES[rec["failure_mode"]])
        self.cause_counts[cause] = self.cause_counts.get(cause, 0) + 1
        init_sum = self.init_sums.setdefault(rec["job_type"], [0.0, 0])
        init_sum[0] += truth["init_seconds"]
        init_sum[1] += 1
        w.job_truth.writerow(
            [
                truth["job_id"], rec["site"], rec["host"], rec["job_type"], rec["cores"], sig,
                truth["true_speed"], truth["planted_efficiency"], truth["init_seconds"],
                truth["outlier"],
            ]
        )  # fmt: skip

    def _corrupt_job(self, rec: dict[str, Any]) -> tuple[dict[str, Any], str]:
        rec = dict(rec, job_id=f"bad-{rec['job_id']}")
        kind = self.rng.randrange(6)
        if kind == 0:
            rec["wall_seconds"] = -abs(rec["wall_seconds"])
            return rec, "out of range: wall_seconds < 0"
        if kind == 1:
            rec["cores"] = 0
            return rec, "out of range: cores < 1"
        if kind == 2:
            rec["start_time"], rec["end_time"] = rec["end_time"], rec["start_time"]
            rec["start_time"] = synth.ts(_parse(rec["start_time"]) + 3600)
            return rec, "end_time before start_time"
        if kind == 3:
            del rec["site"]
            return rec, "missing required field: site"
        if kind == 4:
            rec["status"] = "finished"
            return rec, "invalid value: status"
        rec["submit_time"] = "1999-12-31T23:00:00Z"
        return rec, "timestamp before 2000: submit_time"

    def _host_fleet_model(self, site: Site, index: int) -> CpuModel:
        # the first hosts cover the site's models in turn, the rest are drawn by weight
        if index < len(site.fleet):
            return self.grid.models[site.fleet[index][0]]
        return self.grid.models[synth.pick(self.rng, site.fleet)]

    def _occupation_weights(self, site: Site) -> list[tuple[tuple[str, str], float]]:
        out = []
        for jt, spec in JOB_TYPES.items():
            lanes = sum(w * (SLOT_CORES // c) for c, w in spec.cores) / sum(
                w for _, w in spec.cores
            )
            for vo in site.vos:
                vo_share = 1.0 if len(site.vos) == 1 else (ATLAS_SHARE if vo == "atlas" else 0.3)
                out.append(((vo, jt), spec.count_share * vo_share / lanes))
        return out

    def run_host(self, w: _Writers, site: Site, index: int) -> None:
        g, rng = self.grid, self.rng
        host = f"wn{index + 1:04d}.{site.domain}"
        model = self._host_fleet_model(site, index)
        mix = self.host_models.setdefault(site.name, {})
        mix[model.name] = mix.get(model.name, 0) + 1
        monitored = index < g.config.monitored_hosts_per_site
        weights = self._occupation_weights(site)
        node = (
            _NodeState(
                site,
                host,
                model.microarchitecture,
                rng,
                g.config.node_interval,
                g.range_start,
                g.config.bad_share,
                g.config.seed,
                self.bad_records,
            )
            if monitored
            else None
        )
        t = g.range_start + rng.randrange(600)
        while t < g.range_end:
            vo, jt = synth.pick(rng, weights)
            task = rng.choice(g.tasks[(vo, jt)])
            lanes = SLOT_CORES // task.cores
            runs: list[_Run] = []
            occ_end = t
            for _ in range(lanes):
                self.serial += 1
                base_id = f"sim{g.config.seed}-{self.serial:09d}"
                events = max(1, round(task.events * rng.uniform(0.6, 1.4)))
                lane_t = t + rng.randrange(0, 30)
                retry_of = None
                for attempt in range(1, MAX_ATTEMPTS + 1):
                    rec, run, truth = self._attempt(
                        host, site, model, task, lane_t, attempt, base_id, retry_of, events
                    )
                    self._emit_job(w, rec, truth)
                    runs.append(run)
                    lane_t = run.end
                    if rec["status"] == "success" or rng.random() > RETRY_PROBABILITY:
                        break
                    retry_of = rec["job_id"]
                    lane_t += rng.randrange(60, 600)
                occ_end = max(occ_end, lane_t)
            if node is not None:
                node.emit_until(w.nodes, min(occ_end, g.range_end), runs, self.counts)
            t = occ_end + rng.randrange(*PILOT_GAP_SECONDS)
            if self._bar is not None and self.first_attempts - self._bar.n >= 1000:
                self._bar.update(self.first_attempts - self._bar.n)
        if node is not None:
            node.emit_until(w.nodes, g.range_end, [], self.counts)

    def run_jobs(self, w: _Writers) -> None:
        g = self.grid
        if self.progress:
            from tqdm import tqdm

            self._bar = tqdm(total=g.config.jobs, unit=" jobs", desc="simulate", file=sys.stderr)
        while self.first_attempts < g.config.jobs:
            # next host goes to the site with the fewest hosts for its weight
            site = min(g.sites, key=lambda s: (s.hosts / s.weight, s.name))
            index = site.hosts
            site.hosts += 1
            self.run_host(w, site, index)
        if self._bar is not None:
            self._bar.n = self.first_attempts
            self._bar.close()

    # -- network ------------------------------------------------------------------------------

    def run_network(self, w: _Writers) -> dict[str, Any]:
        g, rng, cfg = self.grid, self.rng, self.grid.config
        names = [s.name for s in g.sites]
        pairs = [(a, b) for a in g.sites for b in g.sites if a is not b]
        planted: dict[str, Any] = {"congestion_episodes": [], "paths": {}}
        congested: set[tuple[str, str]] = set()
        drift: tuple[str, str] | None = None
        outage: tuple[str, str] | None = None
        drop: tuple[str, str] | None = None
        if cfg.effects:
            congested = {(names[0], names[2]), (names[3], names[0])}
            drift = (names[-1], names[-2])
            outage = (names[2], names[4])
            drop = (names[5], names[0])
            planted.update(
                congested_paths=[list(p) for p in sorted(congested)],
                recurring_spike={
                    "dst_site": g.roles["recurring_spike_site"],
                    "days": [calendar.day_name[d] for d in sorted(set(cfg.spike_days))],
                    "hours_utc": list(WEEKEND_SPIKE_HOURS_UTC),
                    "extra_delay_ms": WEEKEND_SPIKE_MS,
                },
                clock_drift={"src_site": drift[0], "dst_site": drift[1],
                             "ms_per_day": CLOCK_DRIFT_MS_PER_DAY},
                outage={"src_site": outage[0], "dst_site": outage[1]},
                throughput_drop={"src_site": drop[0], "dst_site": drop[1],
                                 "factor": THROUGHPUT_DROP_FACTOR,
                                 "from": synth.ts(g.range_end - 2 * 86400)},
            )  # fmt: skip
        start, end = g.range_start, g.range_end
        outage_window = (start + (end - start) // 2, start + (end - start) // 2 + 2 * 3600)
        if outage:
            planted["outage"]["start"] = synth.ts(outage_window[0])
            planted["outage"]["end"] = synth.ts(outage_window[1])
        packets = LATENCY_PACKETS_PER_SECOND * cfg.latency_interval
        for src, dst in pairs:
            path = (src.name, dst.name)
            base = synth.base_delay_ms(src.lat, src.lon, dst.lat, dst.lon) + rng.uniform(-0.1, 0.3)
            u_base, u_amp = rng.uniform(0.15, 0.4), rng.uniform(0.05, 0.2)
            capacity, ceiling = path_capacity(cfg.seed, src, dst)
            planted["paths"][f"{src.name}->{dst.name}"] = {
                "link_capacity_bps": capacity,
                "achievable_throughput_bps": round(ceiling, -3),
            }
            episodes: list[tuple[int, int, float]] = []
            if path in congested:
                day = start
                while day < end:
                    s0 = day + rng.randrange(6 * 3600, 18 * 3600)
                    episodes.append(
                        (s0, s0 + rng.randrange(3600, 4 * 3600), rng.uniform(0.86, 0.97))
                    )
                    day += 86400
                for e in episodes:
                    planted["congestion_episodes"].append(
                        {"src_site": src.name, "dst_site": dst.name, "start": synth.ts(e[0]),
                         "end": synth.ts(e[1]), "peak_utilisation": round(e[2], 3)}
                    )  # fmt: skip
            spike = cfg.effects and dst.name == g.roles.get("recurring_spike_site")
            noise = 0.0
            t = start + rng.randrange(cfg.latency_interval)
            hosts = {
                "src_site": src.name,
                "dst_site": dst.name,
                "src_host": f"psonar1.{src.domain}",
                "dst_host": f"psonar1.{dst.domain}",
            }
            next_tp = start + rng.randrange(cfg.throughput_interval)
            while t < end:
                noise = 0.95 * noise + rng.gauss(0, 0.02)
                u = _utilisation(t, u_base, u_amp, noise, episodes)
                queue = 60 * max(0.0, u - 0.75) ** 1.5
                loss_rate = 0.05 * max(0.0, (u - CONGESTION_ONSET) / 0.2) ** 2 + 1e-6
                extra = 0.0
                if spike and _spike_time(t, cfg.spike_days):
                    extra = WEEKEND_SPIKE_MS
                if path == drift:
                    extra += CLOCK_DRIFT_MS_PER_DAY * (t - start) / 86400
                lost = synth.poisson(rng, loss_rate * packets)
                if path == outage and outage_window[0] <= t < outage_window[1]:
                    lost = packets
                d_min = base + rng.uniform(0.0, 0.05) + extra
                d_median = d_min + rng.uniform(0.03, 0.2) + 0.8 * queue
                rec = {
                    **hosts,
                    "ts": synth.ts(t),
                    "test": "latency",
                    "delay_mean_ms": round(d_median + rng.uniform(0.0, 0.1) + 0.3 * queue, 3),
                    "delay_median_ms": round(d_median, 3),
                    "delay_min_ms": round(d_min, 3),
                    "delay_sd_ms": round(rng.uniform(0.02, 0.15) + 0.5 * queue, 3),
                    "packet_loss": round(min(1.0, lost / packets), 7),
                    "throughput_bps": None,
                    "retransmits": None,
                    "tool": "owping",
                }
                if cfg.bad_share > 0 and rng.random() < cfg.bad_share:
                    rec = dict(rec, packet_loss=1.5, ts=synth.ts(t + 1))
                    key = f"{rec['src_host']}|{rec['dst_host']}|{rec['ts']}|latency"
                    self.bad_records.append(
                        {
                            "topic": "grid.network",
                            "key": key,
                            "rule": "out of range: packet_loss > 1",
                        }
                    )
                    self.counts["bad_network"] = self.counts.get("bad_network", 0) + 1
                w.network.write(synth.dumps(rec) + "\n")
                w.link_truth.writerow([src.name, dst.name, synth.ts(t), round(u, 4)])
                self.counts["network"] = self.counts.get("network", 0) + 1
                while next_tp <= t and next_tp < end:
                    spare = max(0.01, 1 - u) * capacity
                    bps = min(ceiling * rng.uniform(0.6, 0.98), spare * rng.uniform(0.7, 0.95))
                    if path == drop and next_tp >= end - 2 * 86400:
                        bps *= THROUGHPUT_DROP_FACTOR
                    w.network.write(
                        synth.dumps(
                            {
                                **hosts,
                                "ts": synth.ts(next_tp),
                                "test": "throughput",
                                "delay_mean_ms": None,
                                "delay_median_ms": None,
                                "delay_min_ms": None,
                                "delay_sd_ms": None,
                                "packet_loss": None,
                                "throughput_bps": round(bps, -3),
                                "retransmits": synth.poisson(rng, 40)
                                + (synth.poisson(rng, 20_000 * (u - 0.75)) if u > 0.75 else 0),
                                "tool": "iperf3",
                            }
                        )
                        + "\n"
                    )
                    self.counts["network"] += 1
                    next_tp += cfg.throughput_interval
                t += cfg.latency_interval
        return planted


class _NodeState:
    """vmstat/iostat state of one monitored host; samples follow the attempts running on it."""

    def __init__(
        self, site: Site, host: str, microarchitecture: str, rng: random.Random, interval: int,
        t0: int, bad_share: float = 0.0, seed: int = 0,
        bad_records: list[dict[str, str]] | None = None,
    ) -> None:  # fmt: skip
        self.site, self.host, self.rng, self.interval = site, host, rng, interval
        # Hardware counters: planted IPC per job type, noise from a generator of its own (so
        # that the other fields keep their random sequence)
        self.microarchitecture = microarchitecture
        self.counters = has_counters(host)
        self.ipc_rng = random.Random(f"{seed}|ipc|{host}")
        # Planted bad samples are extra records (a garbled copy one second after a good one),
        # drawn from a generator of their own: planting them moves nothing else.
        self.bad_share, self.bad_records = bad_share, bad_records
        self.bad_rng = random.Random(f"{seed}|bad-nodes|{host}") if bad_share > 0 else None
        self.next_ts = t0 - t0 % interval + interval
        self.mem_total_kb = (12 if "memory_restricted_site" in site.roles else 32) * 1024 * 1024
        self.cache_kb = self.mem_total_kb * 0.3
        self.swpd_kb = 0.0
        self.slow_disk = "slow_storage_site" in site.roles
        self.previous: list[_Run] = []

    def emit_until(self, out: TextIO, until: int, runs: list[_Run], counts: dict[str, int]) -> None:
        active = self.previous + runs
        while self.next_ts < until:
            ts = self.next_ts
            running = [r for r in active if r.start <= ts < r.end]
            out.write(self._samples(ts, running))
            out.write(self._perf(ts, running))
            counts["nodes"] = counts.get("nodes", 0) + 3
            if self.bad_rng is not None and self.bad_rng.random() < self.bad_share:
                out.write(self._bad_sample(ts))
                counts["bad_nodes"] = counts.get("bad_nodes", 0) + 1
            self.next_ts += self.interval
        self.previous = [r for r in active if r.end > until]

    def _bad_sample(self, ts: int) -> str:
        """A broken sample (one of three faults) and its record in ``bad_records``."""
        assert self.bad_rng is not None and self.bad_records is not None
        rec: dict[str, Any] = {
            "site": self.site.name, "host": self.host, "ts": synth.ts(ts + 1),
            "interval_seconds": self.interval, "kind": "vmstat", "us": 10, "sy": 1, "id": 89,
            "wa": 0,
        }  # fmt: skip
        fault = self.bad_rng.randrange(3)
        if fault == 0:
            rec["kind"], rule = "sar", "invalid value: kind"
        elif fault == 1:
            rec["interval_seconds"], rule = -self.interval, "out of range: interval_seconds < 0"
        else:
            rec["wa"], rule = -5, "out of range: wa < 0"
        key = f"{self.host}|{rec['ts']}|{rec['kind']}"
        self.bad_records.append({"topic": "grid.nodes", "key": key, "rule": rule})
        return synth.dumps(rec) + "\n"

    def _perf(self, ts: int, running: list[_Run]) -> str:
        """The host's perf record: cycles of each running attempt (its busy cores x clock) at
        its job type's planted IPC, with a little noise; a VM says <not supported>."""
        rec: dict[str, Any] = {
            "site": self.site.name, "host": self.host, "ts": synth.ts(ts),
            "interval_seconds": self.interval, "kind": "perf",
        }  # fmt: skip
        if not self.counters:
            return (
                synth.dumps(
                    {
                        **rec,
                        "instructions": None,
                        "cycles": None,
                        "counters_available": "not_supported",
                    }
                )
                + "\n"
            )
        cycles = instructions = 0.0
        for r in running:
            busy = INIT_CPU_SHARE * r.cores if ts < r.init_end else r.cores * r.eff
            c = busy * CLOCK_HZ * self.interval
            cycles += c
            instructions += c * planted_ipc(self.microarchitecture, r.job_type)
        instructions *= 1.0 + self.ipc_rng.gauss(0.0, IPC_NOISE)
        return synth.dumps(
            {**rec, "instructions": round(instructions), "cycles": round(cycles),
             "counters_available": "yes"}
        ) + "\n"  # fmt: skip

    def _samples(self, ts: int, running: list[_Run]) -> str:
        rng = self.rng
        busy = iow = read_kbs = sys_share = 0.0
        swapping = io_saturated = False
        # no RNG draw (the other fields keep their random sequence): a small deterministic ripple
        rx_kbs = 30.0 + 10.0 * (ts // self.interval % 7)
        for r in running:
            rx_kbs += NET_RX_KBS.get(r.signature, NET_RX_KBS_OTHER) if ts >= r.init_end else 0.0
            if ts < r.init_end:
                busy += INIT_CPU_SHARE * r.cores
                sys_share += INIT_CPU_SHARE * r.cores * 0.1
                continue
            b = r.cores * r.eff
            busy += b
            sys_share += b * r.system_fraction
            iow += r.cores * (1 - r.eff) * IOWAIT_SHARE[r.signature]
            read_kbs += r.read_kbs
            swapping |= r.signature == "memory_bound"
            io_saturated |= r.signature == "io_wait_bound"
        n = SLOT_CORES
        us = synth.clip(100 * (busy - sys_share) / n + rng.gauss(0, 0.8), 0, 100)
        sy = synth.clip(100 * sys_share / n + 0.5 + rng.gauss(0, 0.2), 0, 100)
        wa = synth.clip(100 * iow / n + abs(rng.gauss(0, 0.3)), 0, 100)
        total = us + sy + wa
        if total > 100:
            us, sy, wa = (v * 100 / total for v in (us, sy, wa))
        if io_saturated and self.slow_disk:
            util = synth.clip(88 + rng.gauss(0, 4), 70, 99.9)
            r_await = rng.uniform(25, 80)
        else:
            util = synth.clip(2 + 30 * iow / n + read_kbs / 20000 + rng.gauss(0, 0.5), 0.1, 60)
            r_await = rng.uniform(0.3, 3.0)
        r_s = max(0.0, read_kbs / 64 + rng.uniform(0, 3))
        w_s = rng.uniform(1, 20)
        si = so = 0.0
        if swapping:
            si, so = rng.uniform(500, 5000), rng.uniform(800, 8000)
            self.swpd_kb = min(self.swpd_kb + so * self.interval * 0.2, 16 * 1024 * 1024)
            self.cache_kb = max(self.mem_total_kb * 0.02, self.cache_kb * 0.96)
        else:
            self.swpd_kb = max(0.0, self.swpd_kb - 20_000 * self.interval / 60)
            target = self.mem_total_kb * 0.55
            self.cache_kb += (target - self.cache_kb) * 0.05 * rng.uniform(0.5, 1.5)
        resident = self.mem_total_kb * (0.1 + 0.05 * len(running))
        if swapping:
            resident = self.mem_total_kb * 0.95
        buff = self.mem_total_kb * 0.01
        free = max(0.0, self.mem_total_kb - resident - buff - self.cache_kb)
        stamp = synth.ts(ts)
        base = {"site": self.site.name, "host": self.host, "ts": stamp,
                "interval_seconds": self.interval}  # fmt: skip
        swap_disk = {
            "device": "sda",
            "r_s": round(si / 4 + rng.uniform(0, 2), 2),
            "w_s": round(so / 4 + rng.uniform(1, 8), 2),
            "rkb_s": round(si + rng.uniform(0, 40), 1),
            "wkb_s": round(so + rng.uniform(10, 200), 1),
            "r_await_ms": round(rng.uniform(10, 30) if swapping else rng.uniform(0.5, 4), 2),
            "w_await_ms": round(rng.uniform(15, 40) if swapping else rng.uniform(1, 6), 2),
            "aqu_sz": round(rng.uniform(1, 4) if swapping else rng.uniform(0, 0.1), 2),
            "util_pct": round(
                synth.clip(55 + rng.gauss(0, 8), 20, 99) if swapping else rng.uniform(0.5, 4), 1
            ),
        }  # fmt: skip
        scratch = {
            "device": "sdb" if self.slow_disk else "nvme0n1",
            "r_s": round(r_s, 2),
            "w_s": round(w_s, 2),
            "rkb_s": round(read_kbs, 1),
            "wkb_s": round(w_s * 64, 1),
            "r_await_ms": round(r_await, 2),
            "w_await_ms": round(r_await * rng.uniform(0.8, 1.4), 2),
            "aqu_sz": round(r_s * r_await / 1000, 2),
            "util_pct": round(util, 1),
        }
        us_i, sy_i, wa_i = round(us), round(sy), round(wa)
        id_i = max(0, 100 - us_i - sy_i - wa_i)
        vm = {
            **base,
            "kind": "vmstat",
            "r": round(busy),
            "b": round(iow * 1.2),
            "swpd_kb": round(self.swpd_kb),
            "free_kb": round(free),
            "buff_kb": round(buff),
            "cache_kb": round(self.cache_kb),
            "si": round(si),
            "so": round(so),
            "bi": round(read_kbs + si),
            "bo": round(w_s * 64 + so),
            "in": round((1500 + 300 * busy) * rng.uniform(0.9, 1.1)),
            "cs": round((3000 + 1500 * busy + 500 * iow) * rng.uniform(0.9, 1.1)),
            "us": us_i,
            "sy": sy_i,
            "id": id_i,
            "wa": wa_i,
            "st": 0,
            "net_rx_kb_s": round(rx_kbs, 1),
            "net_tx_kb_s": round(0.05 * rx_kbs + 20.0 * len(running), 1),
        }
        io = {
            **base,
            "kind": "iostat",
            "cpu_user": round(max(0.0, us + rng.gauss(0, 0.3)), 2),
            "cpu_system": round(max(0.0, sy + rng.gauss(0, 0.1)), 2),
            "cpu_iowait": round(max(0.0, wa + rng.gauss(0, 0.2)), 2),
            "cpu_steal": 0.0,
            "cpu_idle": round(max(0.0, 100 - us - sy - wa), 2),
            "disks": [swap_disk, scratch],
        }
        return synth.dumps(vm) + "\n" + synth.dumps(io) + "\n"


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _parse(ts: str) -> int:
    return int(datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp())


def _iso_monday(ts: str) -> str:
    d = date(int(ts[0:4]), int(ts[5:7]), int(ts[8:10]))
    return (d - timedelta(days=d.weekday())).isoformat()


def path_capacity(seed: int, src: Site, dst: Site) -> tuple[float, float]:
    """Planted (link capacity, achievable single-stream throughput) of the path src -> dst, bits/s.

    The link: 100 Gb/s within a continent, 40 Gb/s across an ocean (the utilisation series is a
    share of it). A throughput test reaches at most the path's achievable throughput (host NICs,
    TCP over the round trip, middleboxes): up to 9.4 Gb/s on a short path and 4 Gb/s on a long
    one, each path its own share of that (0.3 to 1.0), drawn from a generator seeded by the path
    so the grid's main random stream, and every other planted quantity, does not depend on it.
    That share is the true order of the paths for moving data (``truth.json`` network.paths).
    """
    short = abs(src.lon - dst.lon) < 40
    share = random.Random(f"{seed}:{src.name}->{dst.name}").uniform(0.3, 1.0)
    return (100e9 if short else 40e9), (9.4e9 if short else 4.0e9) * share


def _utilisation(
    t: int, base: float, amp: float, noise: float, episodes: list[tuple[int, int, float]]
) -> float:
    hour = (t % 86400) / 3600
    daily = max(0.0, math.sin(math.pi * (hour - 6) / 14)) if 6 <= hour < 20 else 0.0
    u = base + amp * daily + noise
    for s, e, peak in episodes:
        if s <= t < e:
            ramp = min(1.0, (t - s) / 1800, (e - t) / 1800)
            u = max(u, u + (peak - u) * ramp)
    return synth.clip(u, 0.0, 0.995)


def _spike_time(t: int, days: tuple[int, ...]) -> bool:
    dt = datetime.fromtimestamp(t, tz=UTC)
    lo, hi = WEEKEND_SPIKE_HOURS_UTC
    return dt.weekday() in days and lo <= dt.hour < hi


# --------------------------------------------------------------------------------------------
# Planted true cost of a unit of work (truth only: no random numbers are drawn)
# --------------------------------------------------------------------------------------------

# Events of a job are the task's events x U(0.6, 1.4): 5-point Gauss-Legendre nodes and weights
# of that uniform (exact for polynomials of degree 9, the cost is smooth in the events).
_GL5 = (
    (-0.9061798459386640, 0.2369268850561891), (-0.5384693101056831, 0.4786286704993665),
    (0.0, 0.5688888888888889), (0.5384693101056831, 0.4786286704993665),
    (0.9061798459386640, 0.2369268850561891),
)  # fmt: skip
STAGE_IN_WALL_SHARE = 0.6  # a stage-in failure ends after init x U(0.2, 1.0): 0.6 init on average


def _lane_cost(site: Site, model: CpuModel, reference: CpuModel, task: Task) -> tuple[float, float]:
    """Expected (core-seconds, successful events) of one lane of ``task`` on a host of ``model``
    at ``site``, per the model of ``Simulation._attempt`` with its noise at its mean.

    An attempt spends init I then payload P (wall D = I + P); it fails at the start with the
    stage-in probability p (after 0.6 I on average) or at hazard h during D. It succeeds with
    q = (1 - p) exp(-h D) and costs n (p 0.6 I + (1 - p)(1 - exp(-h D)) / h) core-seconds on
    average. A failed attempt is retried with RETRY_PROBABILITY, MAX_ATTEMPTS in all; attempts
    are alike, so the lane's expected core-seconds and events share the factor E[attempts].
    """
    spec = JOB_TYPES[task.job_type]
    n = task.cores
    speed = model.speed(task.job_type) * site.speed_factor
    factor, _ = site_efficiency_factor(site, task.job_type, task.vo)
    eff = synth.clip(spec.efficiency * factor * amdahl_parallel_efficiency(n, spec.serial_fraction),
                0.02, 0.99)  # fmt: skip
    init = spec.init_seconds * reference.speed(task.job_type) / speed
    p = spec.stage_in_failure * (2 if "slow_storage_site" in site.roles else 1)
    h = spec.hazard_per_hour / 3600.0
    core_seconds = events = 0.0
    for x, w in _GL5:
        k = task.events * (1.0 + 0.4 * x)
        w *= 0.5  # the weights sum to 2 over [-1, 1]: the mean over the uniform takes half
        d = init + k * task.cpu_per_event / speed / (n * eff)
        survive = math.exp(-h * d) if h > 0 else 1.0
        running = -math.expm1(-h * d) / h if h > 0 else d
        per_attempt = n * (p * STAGE_IN_WALL_SHARE * init + (1 - p) * running)
        q = (1 - p) * survive
        f = RETRY_PROBABILITY * (1 - q)
        attempts = sum(f**j for j in range(MAX_ATTEMPTS))
        core_seconds += w * per_attempt * attempts
        events += w * k * q * attempts
    return core_seconds, events


def true_costs(grid: Grid, host_models: dict[str, dict[str, int]]) -> dict[str, Any]:
    """Planted cost of a unit of work of each job type at each site, in core-seconds per
    successfully processed event (all attempts' core-seconds, failures and retries included).

    The unit of work is the job type's grid-wide workload: every task of the job type, weighted
    as occupations draw them (VO share, then a task at random) times its lanes per occupation.
    On one CPU model m of the site its cost is c_m = sum of expected lane core-seconds / sum of
    expected lane events (a ratio of sums). A site's hosts run work back to back for the whole
    period, so each model gets the site's slot time in proportion to its hosts h_m (the hosts
    the site really got) and processes events at 1 / c_m per core-second:
    cost = sum(h_m) / sum(h_m / c_m).
    """
    reference = grid.models[0]
    by_name = {m.name: m for m in grid.models}
    out: dict[str, Any] = {}
    for site in grid.sites:
        mix = host_models.get(site.name, {})
        hosts = sum(mix.values())
        if not hosts:
            continue
        costs: dict[str, float] = {}
        for jt in JOB_TYPES:
            rate = 0.0  # events per core-second over the site's slot time
            for name, count in mix.items():
                num = den = 0.0
                for vo in ("atlas", "cms"):
                    pool = grid.tasks.get((vo, jt), [])
                    vo_share = ATLAS_SHARE if vo == "atlas" else 1 - ATLAS_SHARE
                    for task in pool:
                        weight = vo_share / len(pool) * (SLOT_CORES // task.cores)
                        cs, ev = _lane_cost(site, by_name[name], reference, task)
                        num += weight * cs
                        den += weight * ev
                rate += count / hosts * den / num
            costs[jt] = 1.0 / rate
        out[site.name] = {
            "core_seconds_per_event": costs,
            "cpu_mix_hosts": dict(sorted(mix.items())),
        }
    return out


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------

JOB_TRUTH_HEADER = [
    "job_id", "site", "host", "job_type", "cores", "signature", "true_speed",
    "planted_efficiency", "init_seconds", "outlier",
]  # fmt: skip


def simulate(config: SimConfig, out_dir: Path, progress: bool = True) -> dict[str, Any]:
    """Write jobs.jsonl, nodes.jsonl, network.jsonl, truth.json, job_truth.csv and
    link_truth.csv into ``out_dir``; return the truth (also in truth.json)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    grid, rng = build_grid(config)
    sim = Simulation(grid, rng, progress=progress)
    names = ("jobs.jsonl", "nodes.jsonl", "network.jsonl", "job_truth.csv", "link_truth.csv")
    files = {n: (out_dir / n).open("w", encoding="utf-8", newline="\n") for n in names}
    try:
        job_truth = csv.writer(files["job_truth.csv"], lineterminator="\n")
        job_truth.writerow(JOB_TRUTH_HEADER)
        link_truth = csv.writer(files["link_truth.csv"], lineterminator="\n")
        link_truth.writerow(["src_site", "dst_site", "ts", "utilisation"])
        w = _Writers(files["jobs.jsonl"], files["nodes.jsonl"], files["network.jsonl"],
                     job_truth, link_truth)  # fmt: skip
        sim.run_jobs(w)
        network = sim.run_network(w)
    finally:
        for fh in files.values():
            fh.close()
    truth = _truth(sim, network)
    (out_dir / "truth.json").write_text(
        json.dumps(truth, indent=2, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8"
    )
    return truth


def _truth(sim: Simulation, network: dict[str, Any]) -> dict[str, Any]:
    g = sim.grid
    cfg = g.config
    reference = g.models[0]
    sums: list[dict[str, Any]] = []
    for (week, site, vo, jt), s in sorted(sim.sums.items()):
        sums.append(
            {
                "week": week, "site": site, "vo": vo, "job_type": jt, "jobs": s.jobs,
                "failed_jobs": s.failed, "core_seconds": s.core_seconds,
                "cpu_seconds": s.cpu_seconds, "good_cpu_seconds": s.good_cpu_seconds,
                "events": s.events,
                "cpu_efficiency": s.cpu_seconds / s.core_seconds if s.core_seconds else None,
            }
        )  # fmt: skip
    job_types = {}
    for jt, spec in JOB_TYPES.items():
        # the initialisation the grid's attempts of the job type really spent (it takes 1/speed)
        total, n = sim.init_sums.get(jt, (0.0, 0))
        init = total / n if n else spec.init_seconds
        opt = optimal_payload_hours(init, spec.hazard_per_hour)
        job_types[jt] = {
            "count_share": round(spec.count_share, 6),
            "cores": [list(c) for c in spec.cores],
            "efficiency": spec.efficiency,
            "serial_fraction": spec.serial_fraction,
            "init_seconds": init,
            "init_seconds_reference_model": spec.init_seconds,
            "hazard_per_hour": spec.hazard_per_hour,
            "hazards": spec.hazards,
            "stage_in_failure": spec.stage_in_failure,
            "optimal_payload_hours": opt,
            "useful_fraction_at_optimum": useful_fraction(opt, init, spec.hazard_per_hour),
            "memory_mb": {"base": spec.rss_base_mb, "per_extra_thread": 200},
            "io_heavy": spec.io_heavy,
        }
    return {
        "config": {
            "start": cfg.start.isoformat(),
            "days": cfg.days,
            "sites": cfg.sites,
            "cpu_models": cfg.cpu_models,
            "jobs": cfg.jobs,
            "seed": cfg.seed,
            "effects": cfg.effects,
            "node_interval": cfg.node_interval,
            "latency_interval": cfg.latency_interval,
            "throughput_interval": cfg.throughput_interval,
            "bad_share": cfg.bad_share,
            "resend_share": cfg.resend_share,
            "monitored_hosts_per_site": cfg.monitored_hosts_per_site,
        },
        "range": {"start": synth.ts(g.range_start), "end_exclusive": synth.ts(g.range_end)},
        "hs23_unit": HS23_UNIT,
        "planted": dict(
            g.roles,
            misconfigured_speed=MISCONFIGURED_SPEED if cfg.effects else None,
            slow_storage_factor=SLOW_STORAGE_FACTOR,
            memory_bound_factor=MEMORY_BOUND_FACTOR,
            remote_read_factor=REMOTE_READ_FACTOR,
            misleading={
                "microarchitecture": MISLEADING_MICROARCH,
                "job_type": MISLEADING_JOB_TYPE,
                "deviation": MISLEADING_DEVIATION,
            },
        ),
        "sites": {
            s.name: {
                "vos": list(s.vos),
                "roles": list(s.roles),
                "hosts": s.hosts,
                "monitored_hosts": [
                    f"wn{i + 1:04d}.{s.domain}"
                    for i in range(min(s.hosts, cfg.monitored_hosts_per_site))
                ],
                "efficiency_factor": s.efficiency_factor,
                "speed_factor": s.speed_factor,
                "cpu_models": [g.models[i].name for i, _ in s.fleet],
                "expected_efficiency": {
                    jt: round(
                        JOB_TYPES[jt].efficiency * site_efficiency_factor(s, jt, "atlas")[0], 6
                    )
                    for jt in JOB_TYPES
                },
                "planted_signature": {
                    jt: site_efficiency_factor(s, jt, "atlas")[1] for jt in JOB_TYPES
                },
            }
            for s in g.sites
        },
        "reference_cpu_model": reference.name,
        "cpu_models": {
            m.name: {
                "microarchitecture": m.microarchitecture,
                "vendor": m.vendor,
                "hs23_per_core": m.hs23_per_core,
                "deviation": m.deviation,
                "speed": {jt: m.speed(jt) for jt in JOB_TYPES},
                "speed_factor_vs_reference": {
                    jt: m.speed(jt) / reference.speed(jt) for jt in JOB_TYPES
                },
                "hs23_factor_vs_reference": m.hs23_per_core / reference.hs23_per_core,
            }
            for m in g.models
        },
        "job_types": job_types,
        # planted IPC of every microarchitecture in the grid, by job type
        "ipc": {
            arch: {jt: planted_ipc(arch, jt) for jt in JOB_TYPES}
            for arch in sorted({m.microarchitecture for m in g.models})
        },
        "true_cost": true_costs(g, sim.host_models),
        "start_failure_modes": list(START_FAILURE_MODES),
        "exit_codes": EXIT_CODES,
        "tasks": sum(len(v) for v in g.tasks.values()),
        "network": network,
        "counts": dict(
            sim.counts, first_attempts=sim.first_attempts, hosts=sum(s.hosts for s in g.sites)
        ),
        "signature_counts": sim.signature_counts,
        "bad_records": sim.bad_records,
        "efficiency_sums": sums,
        "failure_causes": [
            {"week": week, "site": site, "cause": cause, "jobs": n}
            for (week, site, cause), n in sorted(sim.cause_counts.items())
        ],
    }


def iter_job_truth(path: Path) -> Iterator[dict[str, str]]:
    with Path(path).open(encoding="utf-8") as fh:
        yield from csv.DictReader(fh)
