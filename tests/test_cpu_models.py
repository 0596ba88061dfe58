"""CPU-model normalisation: hand-checked microarchitectures, realdata coverage, Spark parity."""

from __future__ import annotations

import csv
import importlib.util
import sys

import pytest

from gridlake.reference.cpu_models import (
    EXACT,
    FAMILY,
    FAMILY_RULES,
    UNKNOWN,
    CpuInfo,
    classify,
    family_of,
    normalise,
    reference_rows,
)
from gridlake.settings import REPO_ROOT
from gridlake.spark import rows_frame

BENCH = REPO_ROOT.parent / "shared" / "realdata" / "hepix-benchmark-scores"
HS23_FILES = ("HS23scores.csv", "jobprobes_withHS23.csv")
HS06_FILES = (
    "sl4-x86_64-gcc346.md",
    "sl5-x86_64-gcc412.md",
    "sl6-x86_64-gcc44.md",
    "sl7-x86_64-gcc48.md",
)

needs_realdata = pytest.mark.skipif(
    not BENCH.is_dir(), reason=f"realdata folder {BENCH} absent (HEPiX benchmark tables)"
)

# Real model strings (verbatim from the realdata files, whitespace included) with vendor and
# microarchitecture written by hand from Intel/AMD/Arm product documentation, not from the code.
HAND_CHECKED: list[tuple[str, str, str]] = [
    # Intel Core (Woodcrest / Clovertown / Harpertown)
    ("Intel Xeon 5160", "Intel", "Intel Core"),
    ("Intel Xeon E5345", "Intel", "Intel Core"),
    ("Intel Xeon E5430", "Intel", "Intel Core"),
    ("Intel Xeon L5420", "Intel", "Intel Core"),
    # Nehalem (Gainestown)
    ("Intel(R) Xeon(R) CPU           E5520  @ 2.27GHz", "Intel", "Nehalem"),
    ("Intel(R) Xeon(R) CPU           X5570  @ 2.93GHz", "Intel", "Nehalem"),
    ("Intel(R) Xeon(R) CPU           X5560  @ 2.80GHz", "Intel", "Nehalem"),
    ("Intel Xeon L5530", "Intel", "Nehalem"),
    # Westmere-EP
    ("Intel(R) Xeon(R) CPU           X5650  @ 2.67GHz", "Intel", "Westmere"),
    ("Intel(R) Xeon(R) CPU           E5620  @ 2.40GHz", "Intel", "Westmere"),
    ("Intel(R) Xeon(R) CPU           L5630  @ 2.13GHz", "Intel", "Westmere"),
    ("Intel(R) Xeon(R) CPU           X5675  @ 3.07GHz", "Intel", "Westmere"),
    # Sandy Bridge-EP/EN (E5 without version)
    ("Intel(R) Xeon(R) CPU E5-2620 0 @ 2.00GHz", "Intel", "Sandy Bridge"),
    ("Intel(R) Xeon(R) CPU E5-2450 0 @ 2.10GHz", "Intel", "Sandy Bridge"),
    ("Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz", "Intel", "Sandy Bridge"),
    ("Intel Xeon E5 2660", "Intel", "Sandy Bridge"),
    # Ivy Bridge (v2)
    ("Intel(R) Xeon(R) CPU E5-2650 v2 @ 2.60GHz", "Intel", "Ivy Bridge"),
    ("Intel(R) Xeon(R) CPU E5-1650 v2 @ 3.50GHz", "Intel", "Ivy Bridge"),
    ("Intel Xeon E5-2670v2", "Intel", "Ivy Bridge"),
    # Haswell (v3, Haswell-E)
    ("Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz", "Intel", "Haswell"),
    ("Intel(R) Xeon(R) CPU E5-2658A v3 @ 2.20GHz", "Intel", "Haswell"),
    ("Intel Xeon E5-2618Lv3", "Intel", "Haswell"),
    ("Intel(R) Core(TM) i7-5960X CPU @ 3.00GHz", "Intel", "Haswell"),
    # Broadwell (v4)
    ("Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", "Intel", "Broadwell"),
    ("Intel(R) Xeon(R) CPU E5-2687W v4 @ 3.00GHz", "Intel", "Broadwell"),
    ("Intel Xeon E5-4669v4", "Intel", "Broadwell"),
    # Skylake (Xeon Scalable 1st gen, Skylake-W) and Kaby Lake
    ("Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz", "Intel", "Skylake"),
    ("Intel(R) Xeon(R) Silver 4114 CPU @ 2.20GHz", "Intel", "Skylake"),
    ("Intel(R) Xeon(R) Platinum 8160 CPU @ 2.10GHz", "Intel", "Skylake"),
    ("Intel Xeon Scalable Platinum 8176", "Intel", "Skylake"),
    ("Intel(R) Xeon(R) W-2125 CPU @ 4.00GHz", "Intel", "Skylake"),
    ("Intel(R) Xeon(R) CPU E3-1270 v6 @ 3.80GHz", "Intel", "Kaby Lake"),
    # Cascade Lake (2nd gen, incl. Cascade Lake-AP Platinum 9200)
    ("Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz", "Intel", "Cascade Lake"),
    ("Intel(R) Xeon(R) Silver 4210R CPU @ 2.40GHz", "Intel", "Cascade Lake"),
    ("Intel(R) Xeon(R) Platinum 9242 CPU @ 2.30GHz", "Intel", "Cascade Lake"),
    # Ice Lake-SP (3rd gen)
    ("Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", "Intel", "Ice Lake"),
    ("Intel(R) Xeon(R) Platinum 8358P CPU @ 2.60GHz", "Intel", "Ice Lake"),
    ("Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz", "Intel", "Ice Lake"),
    # Sapphire Rapids (4th gen, Xeon Max)
    ("Intel(R) Xeon(R) Gold 6430", "Intel", "Sapphire Rapids"),
    ("Intel(R) Xeon(R) Gold 6438Y+", "Intel", "Sapphire Rapids"),
    ("Intel(R) Xeon(R) Platinum 8480CL", "Intel", "Sapphire Rapids"),
    ("Intel (R) Xeon (R) CPU Max 9480", "Intel", "Sapphire Rapids"),
    # Emerald Rapids (5th gen)
    ("INTEL(R) XEON(R) GOLD 6530", "Intel", "Emerald Rapids"),
    ("INTEL(R) XEON(R) GOLD 6542Y", "Intel", "Emerald Rapids"),
    ("INTEL(R) XEON(R) PLATINUM 8592+", "Intel", "Emerald Rapids"),
    # Intel Atom C2000 (Avoton)
    ("Intel Atom C2750", "Intel", "Silvermont"),
    # AMD Opteron: K8, K10 (Barcelona, Istanbul, Magny-Cours), Bulldozer, Piledriver
    ("AMD Opteron 270", "AMD", "K8"),
    ("AMD Opteron 2356", "AMD", "K10"),
    ("AMD Opteron 2427", "AMD", "K10"),
    ("AMD Opteron 6174", "AMD", "K10"),
    ("AMD Opteron(TM) Processor 6212", "AMD", "Bulldozer"),
    ("AMD Opteron(TM) Processor 6274", "AMD", "Bulldozer"),
    ("AMD Opteron(tm) Processor 6378", "AMD", "Piledriver"),
    # AMD EPYC / Ryzen
    ("AMD EPYC 7551P 32-Core Processor", "AMD", "Zen 1"),
    ("AMD EPYC 7301 16-Core Processor", "AMD", "Zen 1"),
    ("AMD EPYC 7302 16-Core Processor", "AMD", "Zen 2"),
    ("AMD EPYC 7H12 64-Core Processor", "AMD", "Zen 2"),
    ("AMD EPYC 7F72 24-Core Processor", "AMD", "Zen 2"),
    ("AMD Ryzen 7 3800X 8-Core Processor", "AMD", "Zen 2"),
    ("AMD EPYC 7763 64-Core Processor", "AMD", "Zen 3"),
    ("AMD EPYC 72F3 8-Core Processor", "AMD", "Zen 3"),
    ("AMD EPYC 7773X 64-Core Processor", "AMD", "Zen 3"),
    ("AMD EPYC 9654 96-Core Processor", "AMD", "Zen 4"),
    ("AMD EPYC 9754 128-Core Processor", "AMD", "Zen 4"),
    ("AMD EPYC 8434PN 48-Core Processor", "AMD", "Zen 4"),
    ("AMD EPYC 4564P 16-Core Processor", "AMD", "Zen 4"),
    ("AMD EPYC 9115 16-Core Processor", "AMD", "Zen 5"),
    ("AMD EPYC 9655 96-Core Processor", "AMD", "Zen 5"),
    ("AMD EPYC 9965 192-Core Processor", "AMD", "Zen 5"),
    # Arm Neoverse (Ampere Altra = N1, NVIDIA Grace = V2)
    ("Neoverse-N1", "ARM", "Neoverse N1"),
    ("Neoverse-N1 - Ampere(R) Altra(R) Max Processor M128-30 3.00GHz", "ARM", "Neoverse N1"),
    ("Neoverse-V2 - Grace A02 900-2G535-0020-000 CPU @ 3.3GHz", "ARM", "Neoverse V2"),
]

# Not in the realdata files (no Xeon 6 there yet): spellings as /proc/cpuinfo prints them.
HAND_CHECKED_FAMILY_ONLY: list[tuple[str, str, str]] = [
    ("Intel(R) Xeon(R) 6980P", "Intel", "Granite Rapids"),
    ("Intel(R) Xeon(R) 6767P", "Intel", "Granite Rapids"),
    ("Intel(R) Xeon(R) 6780E", "Intel", "Sierra Forest"),
    ("Intel(R) Xeon(R) Gold 6134 CPU @ 3.20GHz", "Intel", "Skylake"),
    ("Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz", "Intel", "Ice Lake"),
    ("Intel(R) Xeon(R) Platinum 8380H CPU @ 2.90GHz", "Intel", "Cooper Lake"),
    ("Intel(R) Xeon(R) CPU E5-2690 0 @ 2.90GHz", "Intel", "Sandy Bridge"),
    ("Intel(R) Xeon(R) CPU E7-4870 v2 @ 2.30GHz", "Intel", "Ivy Bridge"),
    ("Intel(R) Xeon(R) CPU E7- 4870  @ 2.40GHz", "Intel", "Westmere"),
    ("Intel(R) Xeon(R) CPU E3-1230 V2 @ 3.30GHz", "Intel", "Ivy Bridge"),
    ("Intel(R) Xeon(R) CPU           X5690  @ 3.47GHz", "Intel", "Westmere"),
    ("Intel(R) Xeon(R) CPU           E5462  @ 2.80GHz", "Intel", "Intel Core"),
    ("Quad-Core AMD Opteron(tm) Processor 2380", "AMD", "K10"),
    ("AMD Opteron(tm) Processor 6380", "AMD", "Piledriver"),
    ("AMD EPYC 7R13 48-Core Processor", "AMD", "Zen 3"),
    ("AMD EPYC 9R14 96-Core Processor", "AMD", "Zen 4"),
    ("AMD EPYC 9575F 64-Core Processor", "AMD", "Zen 5"),
    ("Neoverse-V1", "ARM", "Neoverse V1"),
]

# Must stay unknown: virtual/generic CPU models, placeholders and models no rule covers.
MUST_STAY_UNKNOWN = [
    "QEMU Virtual CPU version 2.5+",
    "Common KVM processor",
    "",
    "not_available",
    "AMD EPYC Processor (with IBPB)",
    "Intel Core Processor (Haswell, no TSX, IBRS)",
    "Intel Xeon Processor (Skylake, IBRS)",
    "Intel Xeon 3.00GHz",
    "AMD Ryzen 9 7950X 16-Core Processor",
    "Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz",
]

# The realdata strings that do not identify a physical CPU (written out by hand).
REALDATA_NON_HARDWARE = {
    "QEMU Virtual CPU version 2.5+",
    "AMD EPYC Processor (with IBPB)",
    "Intel Core Processor (Haswell, no TSX, IBRS)",
    "not_available",
}

MICROARCHITECTURES = {
    "Intel Core", "NetBurst", "Nehalem", "Westmere", "Sandy Bridge", "Ivy Bridge", "Haswell",
    "Broadwell", "Skylake", "Kaby Lake", "Cascade Lake", "Cooper Lake", "Ice Lake",
    "Sapphire Rapids", "Emerald Rapids", "Granite Rapids", "Sierra Forest", "Knights Landing",
    "Silvermont", "K8", "K10", "Bulldozer", "Piledriver", "Zen 1", "Zen 2", "Zen 3", "Zen 4",
    "Zen 5", "Neoverse N1", "Neoverse N2", "Neoverse V1", "Neoverse V2", "Neoverse V3",
    "Cortex-X925/A725",
}  # fmt: skip


# --------------------------------------------------------------------------------------------
# Helpers: the model strings of the realdata files
# --------------------------------------------------------------------------------------------


def hs23_models() -> list[str]:
    out = []
    for name in HS23_FILES:
        with (BENCH / name).open(newline="", encoding="utf-8") as f:
            out += [r["CPU"] for r in csv.DictReader(f)]
    return out


def hs06_models() -> list[str]:
    out = []
    for name in HS06_FILES:
        in_results = False
        for line in (BENCH / name).read_text(encoding="utf-8").splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("|") and cells[0] == "CPU":
                in_results = True
            elif in_results and line.startswith("|") and not set(cells[0]) <= {"-"}:
                out.append(cells[0])
    return out


def all_realdata_models() -> list[str]:
    return sorted(set(hs23_models()) | set(hs06_models()))


def load_build_script():
    path = REPO_ROOT / "jobs" / "gridlake" / "reference" / "build_cpu_models.py"
    spec = importlib.util.spec_from_file_location("_build_cpu_models", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------------------------
# (a) pure Python, hand-checked
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "vendor", "micro"), HAND_CHECKED)
def test_hand_checked_microarchitecture(model, vendor, micro):
    info = classify(model)
    assert (info.vendor, info.microarchitecture) == (vendor, micro), info
    assert info.match in (EXACT, FAMILY)


@pytest.mark.parametrize(("model", "vendor", "micro"), HAND_CHECKED + HAND_CHECKED_FAMILY_ONLY)
def test_family_rules_alone_agree_with_hand_table(model, vendor, micro):
    """Without the reference table, the rules give the same answer (or none for oddities)."""
    family = family_of(normalise(model))
    if family is None:  # a model the table knows but no rule covers (Ryzen, Core i7, Cortex)
        assert normalise(model) in reference_rows()
    else:
        assert family == (vendor, micro)


@pytest.mark.parametrize(("model", "vendor", "micro"), HAND_CHECKED_FAMILY_ONLY)
def test_family_match_has_no_benchmark(model, vendor, micro):
    assert classify(model) == CpuInfo(vendor, micro, None, FAMILY)


@pytest.mark.parametrize("model", MUST_STAY_UNKNOWN)
def test_unknown_stays_unknown(model):
    assert classify(model) == CpuInfo(None, None, None, UNKNOWN)


def test_missing_model_is_unknown():
    assert classify(None) == CpuInfo(None, None, None, UNKNOWN)


def test_hand_table_is_big_enough():
    assert len(HAND_CHECKED) >= 40
    micros = {m for _, _, m in HAND_CHECKED + HAND_CHECKED_FAMILY_ONLY}
    for needed in ("Nehalem", "Granite Rapids", "Zen 1", "Zen 5", "Bulldozer", "Neoverse V2"):
        assert needed in micros


@pytest.mark.parametrize(
    ("raw", "norm"),
    [
        ("Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz", "intel xeon e5-2630 v3"),
        ("Intel Xeon E5-2630v3", "intel xeon e5-2630 v3"),
        ("Intel(R) Xeon(R) CPU           E5520  @ 2.27GHz", "intel xeon e5520"),
        ("Intel(R) Xeon(R) CPU E5-2620 0 @ 2.00GHz", "intel xeon e5-2620"),
        ("Intel Xeon E5 2620", "intel xeon e5-2620"),
        ("Intel Xeon E5-2618Lv3", "intel xeon e5-2618l v3"),
        ("AMD EPYC 7302 16-Core Processor", "amd epyc 7302"),
        ("Quad-Core AMD Opteron(tm) Processor 2376", "amd opteron 2376"),
        ("AMD Opteron(TM) Processor 6274", "amd opteron 6274"),
        ("Intel Xeon Scalable Gold 5120", "intel xeon gold 5120"),
        ("Intel (R) Xeon (R) CPU Max 9480", "intel xeon max 9480"),
        ("INTEL(R) XEON(R) PLATINUM 8592+", "intel xeon platinum 8592+"),
        ("Intel® Xeon® Gold 6130 CPU @ 2.10GHz", "intel xeon gold 6130"),
        ("  Neoverse-V2\t", "neoverse-v2"),
        ("", ""),
    ],
)
def test_normalise(raw, norm):
    assert normalise(raw) == norm


def test_exact_match_carries_measured_hs23_only():
    haswell = classify("Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz")
    assert haswell.match == EXACT
    assert haswell.hs23_per_core is not None and 5 < haswell.hs23_per_core < 20
    hs06_only = classify("Intel Xeon E5430")  # legacy HS06 table only: no HS23 measurement
    assert hs06_only.match == EXACT
    assert hs06_only.hs23_per_core is None
    assert reference_rows()[normalise("Intel Xeon E5430")].hs06_per_core is not None


def test_reference_table_is_consistent():
    rows = reference_rows()
    assert len(rows) > 200
    for norm, r in rows.items():
        assert norm == normalise(norm), norm  # normalisation is idempotent on the keys
        assert r.vendor in {"Intel", "AMD", "ARM"}, r
        assert r.microarchitecture in MICROARCHITECTURES, r
        assert r.hs23_per_core is not None or r.hs06_per_core is not None, r
        for v in (r.hs23_per_core, r.hs06_per_core):
            assert v is None or 3 < v < 50, r
        assert r.n_measurements >= 1
        family = family_of(norm)
        assert family is None or family == (r.vendor, r.microarchitecture), r


def test_family_rules_are_well_formed():
    assert all(v in {"Intel", "AMD", "ARM"} for _, v, _ in FAMILY_RULES)
    assert all(m in MICROARCHITECTURES for _, _, m in FAMILY_RULES)
    assert len({p for p, _, _ in FAMILY_RULES}) == len(FAMILY_RULES)


# --------------------------------------------------------------------------------------------
# (b) coverage of the realdata files
# --------------------------------------------------------------------------------------------


@needs_realdata
def test_every_hs23_model_is_classified():
    models = set(hs23_models())
    unknown = {m for m in models if classify(m).match == UNKNOWN}
    assert unknown == REALDATA_NON_HARDWARE
    for m in models - REALDATA_NON_HARDWARE:
        info = classify(m)
        assert info.match == EXACT, m
        assert info.hs23_per_core is not None, m


@needs_realdata
def test_hs06_tables_unknown_share(capsys):
    models = hs06_models()
    unknown = [m for m in models if classify(m).match == UNKNOWN]
    distinct = set(models)
    distinct_unknown = set(unknown)
    with capsys.disabled():
        print(
            f"\nHS06 tables: {len(unknown)}/{len(models)} rows unknown "
            f"({len(unknown) / len(models):.1%}), {len(distinct_unknown)}/{len(distinct)} "
            f"distinct models unknown ({len(distinct_unknown) / len(distinct):.1%}): "
            f"{sorted(distinct_unknown)}"
        )
    assert len(unknown) / len(models) < 0.05


@needs_realdata
def test_reference_csv_is_up_to_date():
    build = load_build_script()
    text = build.render(build.build_rows(BENCH.parent))
    packaged = (REPO_ROOT / "jobs" / "gridlake" / "reference" / "cpu_models.csv").read_text(
        encoding="utf-8"
    )
    assert text == packaged, "run: python jobs/gridlake/reference/build_cpu_models.py"


# --------------------------------------------------------------------------------------------
# (c) Spark: the same normalisation and classification with built-ins
# --------------------------------------------------------------------------------------------

EDGE_STRINGS = [
    "",
    "   ",
    "Intel® Xeon® Gold 6130 CPU @ 2.10GHz",
    "\tAMD EPYC 7302  16-Core Processor \n",
    "Intel(R) Xeon(R) CPU E7- 4870  @ 2.40GHz",
    "Intel(R) Xeon(R) 6980P",
    "Quad-Core AMD Opteron(tm) Processor 2376",
]


@needs_realdata
@pytest.mark.slow
def test_normalise_col_equals_normalise(spark):
    from pyspark.sql import functions as F

    from gridlake.reference.cpu_models import normalise_col

    models = all_realdata_models() + EDGE_STRINGS
    df = rows_frame(spark, [(m,) for m in models], "model string")
    got = {
        r["model"]: r["norm"]
        for r in df.select("model", normalise_col(F.col("model")).alias("norm")).collect()
    }
    mismatches = {m: (got[m], normalise(m)) for m in models if got[m] != normalise(m)}
    assert not mismatches
    assert len(got) == len(set(models))


@pytest.mark.slow
def test_with_cpu_info(spark):
    from gridlake.reference.cpu_models import reference_table, with_cpu_info

    rows = [
        ("j1", "Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz"),  # exact, with HS23
        ("j2", "Intel Xeon E5430"),  # exact, HS06 only
        ("j3", "Intel(R) Xeon(R) Gold 6134 CPU @ 3.20GHz"),  # family
        ("j4", "QEMU Virtual CPU version 2.5+"),  # unknown
        ("j5", None),  # unknown
        ("j6", "AMD EPYC 7302 16-Core Processor"),  # exact
    ]
    df = rows_frame(spark, rows, "job_id string, cpu_model string")
    out = with_cpu_info(df)
    assert out.columns == [
        "job_id",
        "cpu_model",
        "cpu_model_norm",
        "vendor",
        "microarchitecture",
        "reference_hs23_per_core",
        "cpu_match",
    ]
    got = {r["job_id"]: r for r in out.collect()}
    assert out.count() == len(rows)
    ref = reference_rows()
    j1 = got["j1"]
    assert (j1.cpu_model_norm, j1.vendor, j1.microarchitecture, j1.cpu_match) == (
        "intel xeon e5-2630 v3",
        "Intel",
        "Haswell",
        "exact",
    )
    assert j1.reference_hs23_per_core == ref["intel xeon e5-2630 v3"].hs23_per_core
    assert (got["j2"].microarchitecture, got["j2"].reference_hs23_per_core) == ("Intel Core", None)
    assert got["j2"].cpu_match == "exact"
    assert (got["j3"].vendor, got["j3"].microarchitecture, got["j3"].cpu_match) == (
        "Intel",
        "Skylake",
        "family",
    )
    assert got["j3"].reference_hs23_per_core is None
    for j in ("j4", "j5"):
        r = got[j]
        assert (r.vendor, r.microarchitecture, r.reference_hs23_per_core, r.cpu_match) == (
            None,
            None,
            None,
            "unknown",
        )
    assert (got["j6"].microarchitecture, got["j6"].cpu_match) == ("Zen 2", "exact")
    # an explicitly passed reference gives the same result
    again = with_cpu_info(df, reference=reference_table(spark))
    assert sorted(again.collect()) == sorted(out.collect())


@needs_realdata
@pytest.mark.slow
def test_with_cpu_info_agrees_with_classify(spark):
    from gridlake.reference.cpu_models import with_cpu_info

    models = (
        all_realdata_models()
        + [m for m, _, _ in HAND_CHECKED_FAMILY_ONLY]
        + [m for m in MUST_STAY_UNKNOWN if m]
    )
    df = rows_frame(spark, [(m,) for m in sorted(set(models))], "model string")
    out = with_cpu_info(df, model_col="model").collect()
    assert len(out) == len(set(models))
    for r in out:
        expected = classify(r.model)
        got = CpuInfo(r.vendor, r.microarchitecture, r.reference_hs23_per_core, r.cpu_match)
        assert got == expected, r.model
