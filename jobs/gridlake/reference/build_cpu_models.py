"""Regenerate cpu_models.csv from the HEPiX benchmark tables in ../shared/realdata.

Usage (from the repository root, any Python >= 3.11; standard library only):

    python jobs/gridlake/reference/build_cpu_models.py [--realdata DIR] [--out FILE]

Inputs (realdata/hepix-benchmark-scores): HS23scores.csv and jobprobes_withHS23.csv (HEPScore23,
column ``Score/Ncores`` = score per logical CPU) and the legacy HEP-SPEC06 markdown tables
sl4..sl7 (HS06 of the whole machine and "Cores (runs)" = number of copies run).

One output row per normalised model name (``normalise`` and ``FAMILY_RULES`` of
jobs/gridlake/reference/cpu_models.py, loaded by path so no install or Spark is needed):

- hs23_per_core: median of ``Score/Ncores`` over the model's rows of both HS23 files that have
  SMT enabled, or over all its rows when none has; null when the model has no HS23 row.
- hs06_per_core: median of ``HS06 / runs`` over the model's HS06 rows marked "HT on", else over
  its rows not marked "HT off"/"no HT", else over all its rows; null when it has no HS06 row.
- n_measurements: number of result rows that entered the two medians (a row aggregates one or
  more benchmark runs; rows are not weighted by their run count).
- vendor, microarchitecture: OVERRIDES below, else the first family rule; a model with neither
  stops the build (it must be added to OVERRIDES by hand).
- cpu_model_example: the most frequent raw spelling, preferring the HS23 files' (cpuinfo-style)
  spellings over the HS06 tables'.
- source: the files in which the model appears.

Names that do not identify a physical CPU model (virtual CPUs, placeholders, bare "Intel Xeon")
are left out; they classify as unknown.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import re
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]  # jobs/gridlake/reference/
DEFAULT_REALDATA = REPO_ROOT.parent / "shared" / "realdata"
DEFAULT_OUT = HERE / "cpu_models.csv"
BENCH_DIR = "hepix-benchmark-scores"

HS23_FILES = ("HS23scores.csv", "jobprobes_withHS23.csv")
HS06_FILES = (
    "sl4-x86_64-gcc346.md",
    "sl5-x86_64-gcc412.md",
    "sl6-x86_64-gcc44.md",
    "sl7-x86_64-gcc48.md",
)
COLUMNS = (
    "cpu_model_norm",
    "cpu_model_example",
    "vendor",
    "microarchitecture",
    "hs23_per_core",
    "hs06_per_core",
    "n_measurements",
    "source",
)

# Normalised names that are not a physical CPU model: hypervisor CPU models (the host may be any
# later generation), placeholders, and a bare "Intel Xeon 3.00GHz" from the SL4 table.
EXCLUDE = re.compile(
    r"qemu|kvm|virtual|^not_available$|^amd epyc \(|^intel core \(|^intel xeon$", re.ASCII
)

# Measured models that no family rule covers (or where the rule would be too broad to write),
# with the microarchitecture from the vendor's product documentation.
OVERRIDES: dict[str, tuple[str, str]] = {
    "amd ryzen 7 3800x": ("AMD", "Zen 2"),  # Matisse
    "cortex-x925 cortex-a725": ("ARM", "Cortex-X925/A725"),  # NVIDIA GB10: 10 X925 + 10 A725
    "intel core i7-5960x": ("Intel", "Haswell"),  # Haswell-E
}


def load_rules() -> ModuleType:
    """cpu_models.py beside this file as a module (its pure-Python part needs only the
    standard library)."""
    path = HERE / "cpu_models.py"
    spec = importlib.util.spec_from_file_location("_gridlake_cpu_models", path)
    if spec is None or spec.loader is None:
        raise ImportError(path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    return module


@dataclass
class Model:
    hs23: list[tuple[float, bool]] = field(default_factory=list)  # (Score/Ncores, SMT enabled)
    hs06: list[tuple[float, str]] = field(default_factory=list)  # (HS06 per run, "on"/"off"/"")
    spellings_hs23: Counter[str] = field(default_factory=Counter)
    spellings_hs06: Counter[str] = field(default_factory=Counter)
    sources: set[str] = field(default_factory=set)


def read_hs23(path: Path) -> list[tuple[str, float, bool]]:
    """(CPU, Score/Ncores, SMT enabled) of the rows with a score."""
    out = []
    with path.open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            try:
                per_core = float(r["Score/Ncores"])
            except ValueError:  # "-" on rows without a result
                continue
            out.append((r["CPU"], per_core, float(r["SMT enabled"]) == 1.0))
    return out


_RUNS = re.compile(r"^\s*(\d+)")
_HT_ON = re.compile(r"\bht\s*on\b", re.IGNORECASE)
_HT_OFF = re.compile(r"\b(ht|tb)\s*off\b|\bno\s*ht\b", re.IGNORECASE)


def read_hs06(path: Path) -> list[tuple[str, float, str]]:
    """(CPU, HS06 per run, HT flag) of the result rows of a HEP-SPEC06 markdown table."""
    out = []
    in_results = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "CPU":
            in_results = True
            continue
        if not in_results or len(cells) < 5 or not cells[0] or set(cells[0]) <= {"-"}:
            continue
        runs = _RUNS.match(cells[4])
        if runs is None:
            raise ValueError(f"{path.name}: no run count in {line!r}")
        ht = "on" if _HT_ON.search(cells[4]) else "off" if _HT_OFF.search(cells[4]) else ""
        out.append((cells[0], float(cells[1]) / int(runs.group(1)), ht))
    return out


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def collect(realdata: Path, normalise: Callable[[str], str]) -> dict[str, Model]:
    bench = realdata / BENCH_DIR
    models: dict[str, Model] = defaultdict(Model)
    for name in HS23_FILES:
        for cpu, per_core, smt in read_hs23(bench / name):
            m = models[normalise(cpu)]
            m.hs23.append((per_core, smt))
            m.spellings_hs23[cpu] += 1
            m.sources.add(name)
    for name in HS06_FILES:
        for cpu, per_run, ht in read_hs06(bench / name):
            m = models[normalise(cpu)]
            m.hs06.append((per_run, ht))
            m.spellings_hs06[cpu] += 1
            m.sources.add(name)
    return models


def build_rows(realdata: Path = DEFAULT_REALDATA) -> list[dict[str, str]]:
    rules = load_rules()
    models = collect(realdata, rules.normalise)
    source_order = {n: i for i, n in enumerate(HS23_FILES + HS06_FILES)}
    rows = []
    for norm in sorted(models):
        if not norm or EXCLUDE.search(norm):
            continue
        m = models[norm]
        if norm in OVERRIDES:
            vendor, micro = OVERRIDES[norm]
        else:
            family = rules.family_of(norm)
            if family is None:
                raise SystemExit(f"no family rule for {norm!r}: add it to OVERRIDES")
            vendor, micro = family
        smt = [v for v, on in m.hs23 if on]
        hs23_used = smt or [v for v, _ in m.hs23]
        hs06_used = (
            [v for v, ht in m.hs06 if ht == "on"]
            or [v for v, ht in m.hs06 if ht != "off"]
            or [v for v, _ in m.hs06]
        )
        spellings = m.spellings_hs23 or m.spellings_hs06
        example = sorted(spellings.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        rows.append(
            {
                "cpu_model_norm": norm,
                "cpu_model_example": example,
                "vendor": vendor,
                "microarchitecture": micro,
                "hs23_per_core": _fmt(_median(hs23_used)),
                "hs06_per_core": _fmt(_median(hs06_used)),
                "n_measurements": str(len(hs23_used) + len(hs06_used)),
                "source": ";".join(sorted(m.sources, key=source_order.__getitem__)),
            }
        )
    return rows


def render(rows: list[dict[str, str]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--realdata", type=Path, default=DEFAULT_REALDATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    rows = build_rows(args.realdata)
    args.out.write_text(render(rows), encoding="utf-8")
    n23 = sum(1 for r in rows if r["hs23_per_core"])
    n06 = sum(1 for r in rows if r["hs06_per_core"])
    print(f"{args.out}: {len(rows)} models, {n23} with HS23, {n06} with HS06")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
