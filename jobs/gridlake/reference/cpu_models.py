"""CPU model strings -> vendor, microarchitecture and measured HEPscore23 per core.

A model string (``/proc/cpuinfo`` "model name", HTCondor ``CPUModel``, lscpu) is first normalised
(:func:`normalise` in Python, :func:`normalise_col` with Spark built-ins; the same steps, proven
equal by the tests), then looked up in the reference table ``reference/cpu_models.csv`` (built from
the HEPiX Benchmarking WG tables by ``reference/build_cpu_models.py``). A model found there is an
``exact`` match and carries the measured HS23 per core; otherwise the first matching
:data:`FAMILY_RULES` regex gives vendor and microarchitecture only (``family``, never a benchmark
figure); anything else stays ``unknown`` (all nulls), never guessed.

The pure-Python part imports nothing beyond the standard library, so the stdlib-only build script
can reuse :func:`normalise` and :data:`FAMILY_RULES`; PySpark is imported inside the Spark
functions.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

REFERENCE_CSV = "cpu_models.csv"
REFERENCE_COLUMNS = (
    "cpu_model_norm",
    "cpu_model_example",
    "vendor",
    "microarchitecture",
    "hs23_per_core",
    "hs06_per_core",
    "n_measurements",
    "source",
)

# Normalisation steps, applied in order: (Java/Python regex, replacement with $n group references).
# Only constructs that behave identically in Python's ``re`` (with re.ASCII) and Java's
# java.util.regex (Spark's regexp_replace) are used. Before the steps: lower case; after them:
# strip leading/trailing spaces.
NORMALISE_STEPS: list[tuple[str, str]] = [
    # trademark marks: (R), (TM), (tm) and their symbols
    (r"\((r|tm)\)|[®™]", ""),
    # frequency suffix: "@ 2.10GHz", " 3.00GHz", "@ 3.3GHz"
    (r"@?\s*\d+(\.\d+)?\s*[gm]hz\b", ""),
    # filler words
    (r"\b(cpu|processor|scalable)\b", ""),
    # core-count tokens: "16-Core", "Quad-Core", "Dual Core"
    (r"\b(\d+|dual|quad|six|eight|twelve|sixteen)[- ]core\b", ""),
    # collapse whitespace
    (r"\s+", " "),
    # "E5 2660" (HS06 tables), "E7- 4870" (Westmere-EX cpuinfo) -> "e5-2660", "e7-4870"
    (r"\be([357])-? (\d{4})\b", "e$1-$2"),
    # "E5-2620v4" / "E5-2618Lv3" -> "e5-2620 v4" / "e5-2618l v3"
    (r"\b(e[357]-\d{4}[a-z]?) ?(v\d)\b", "$1 $2"),
    # the "0" Intel prints for first-generation E5 parts: "E5-2620 0 @ 2.00GHz" -> "e5-2620"
    (r"\b(e[357]-\d{4}[a-z]?) 0\b", "$1"),
]

_INTEL = "Intel"
_AMD = "AMD"
_ARM = "ARM"
_TIERS = r"(bronze|silver|gold|platinum)"

# (regex on the normalised string, vendor, microarchitecture); ordered, the first match wins.
# Sources: Intel ARK / AMD product pages (model-number schemes), see reference/README.md.
FAMILY_RULES: list[tuple[str, str, str]] = [
    # --- Intel Xeon 6 (2024-): P-core "6xxxP" = Granite Rapids, E-core "6xxxE" = Sierra Forest
    (r"\bxeon 6\d{3}p", _INTEL, "Granite Rapids"),
    (r"\bxeon 6\d{3}e", _INTEL, "Sierra Forest"),
    # --- Xeon Max 94xx (Sapphire Rapids with HBM)
    (r"\bxeon max 94\d{2}", _INTEL, "Sapphire Rapids"),
    # --- Xeon Scalable: the second digit of the model number is the generation
    (rf"\bxeon {_TIERS} \d5\d{{2}}", _INTEL, "Emerald Rapids"),
    (rf"\bxeon {_TIERS} \d4\d{{2}}", _INTEL, "Sapphire Rapids"),
    (r"\bxeon (gold|platinum) [5-8]3\d{2}h", _INTEL, "Cooper Lake"),  # 53xxH/63xxH/83xxH(L)
    (rf"\bxeon {_TIERS} \d3\d{{2}}", _INTEL, "Ice Lake"),
    (rf"\bxeon {_TIERS} \d2\d{{2}}", _INTEL, "Cascade Lake"),  # incl. Platinum 92xx
    (rf"\bxeon {_TIERS} \d1\d{{2}}", _INTEL, "Skylake"),
    # --- Xeon W workstation parts
    (r"\bxeon w-[23]1\d{2}\b", _INTEL, "Skylake"),
    (r"\bxeon w-[23]2\d{2}\b", _INTEL, "Cascade Lake"),
    (r"\bxeon w-33\d{2}\b", _INTEL, "Ice Lake"),
    # --- Xeon Phi x200
    (r"\bxeon phi 72\d{2}\b", _INTEL, "Knights Landing"),
    # --- Xeon E3/E5/E7 with version suffix
    (r"\bxeon e[357]-\d{4}[a-z]? v2\b", _INTEL, "Ivy Bridge"),
    (r"\bxeon e[357]-\d{4}[a-z]? v3\b", _INTEL, "Haswell"),
    (r"\bxeon e[357]-\d{4}[a-z]? v4\b", _INTEL, "Broadwell"),
    (r"\bxeon e3-\d{4}[a-z]? v5\b", _INTEL, "Skylake"),
    (r"\bxeon e3-\d{4}[a-z]? v6\b", _INTEL, "Kaby Lake"),
    # --- first generation (no version): E5/E3 = Sandy Bridge, E7 = Westmere-EX
    (r"\bxeon e5-\d{4}[a-z]?(?! v\d)\b", _INTEL, "Sandy Bridge"),
    (r"\bxeon e3-1\d{3}[a-z]?(?! v\d)\b", _INTEL, "Sandy Bridge"),
    (r"\bxeon e7-\d{4}[a-z]?(?! v\d)\b", _INTEL, "Westmere"),
    # --- pre-2012 four-digit Xeons (letter = power class: X, E, L, W)
    (r"\bxeon [elwx]?55\d{2}\b", _INTEL, "Nehalem"),  # Gainestown
    (r"\bxeon [lwx]?35\d{2}\b", _INTEL, "Nehalem"),  # Bloomfield
    (r"\bxeon [lx]34\d{2}\b", _INTEL, "Nehalem"),  # Lynnfield
    (r"\bxeon [elx][67]5\d{2}\b", _INTEL, "Nehalem"),  # Beckton (Nehalem-EX)
    (r"\bxeon [elwx]?56\d{2}\b", _INTEL, "Westmere"),  # Westmere-EP
    (r"\bxeon [lw]36\d{2}\b", _INTEL, "Westmere"),  # Gulftown
    (r"\bxeon [elx]?5[1-4]\d{2}\b", _INTEL, "Intel Core"),  # Woodcrest..Harpertown
    (r"\bxeon [elx]?3[0-3]\d{2}\b", _INTEL, "Intel Core"),  # Conroe..Yorkfield
    (r"\bxeon [elx]?7[34]\d{2}\b", _INTEL, "Intel Core"),  # Tigerton, Dunnington
    (r"\bxeon 50\d{2}\b", _INTEL, "NetBurst"),  # Dempsey
    (r"\bxeon 7[01]\d{2}[a-z]?\b", _INTEL, "NetBurst"),  # Paxville-MP, Tulsa
    (r"\batom c2\d{3}\b", _INTEL, "Silvermont"),  # Avoton
    # --- AMD EPYC: the last digit of the model number is the generation
    (r"\bepyc [37][0-9a-z]{2}1[a-z]*\b", _AMD, "Zen 1"),  # Naples, Snowy Owl
    (r"\bepyc 7[0-9a-z]{2}2[a-z]*\b", _AMD, "Zen 2"),  # Rome
    (r"\bepyc 7[0-9a-z]{2}3[a-z]*\b", _AMD, "Zen 3"),  # Milan, Milan-X
    (r"\bepyc [489][0-9a-z]{2}4[a-z]*\b", _AMD, "Zen 4"),  # Genoa, Bergamo, Siena, 4004
    (r"\bepyc [49][0-9a-z]{2}5[a-z]*\b", _AMD, "Zen 5"),  # Turin, Turin Dense, 4005
    # --- AMD Opteron
    (r"\bopteron [128]\d{2}\b", _AMD, "K8"),  # 1xx/2xx/8xx
    (r"\bopteron [128]2\d{2}\b", _AMD, "K8"),  # 12xx/22xx/82xx (Santa Rosa)
    (r"\bopteron [128][34]\d{2}\b", _AMD, "K10"),  # Barcelona, Shanghai, Istanbul
    (r"\bopteron [46]1\d{2}\b", _AMD, "K10"),  # Lisbon, Magny-Cours
    (r"\bopteron [346]2\d{2}\b", _AMD, "Bulldozer"),  # Zurich, Valencia, Interlagos
    (r"\bopteron [346]3\d{2}\b", _AMD, "Piledriver"),  # Delhi, Seoul, Abu Dhabi
    # --- Arm Neoverse (lscpu names the core; Ampere Altra = N1, NVIDIA Grace = V2)
    (r"\bneoverse-n1\b|\bampere altra\b", _ARM, "Neoverse N1"),
    (r"\bneoverse-n2\b", _ARM, "Neoverse N2"),
    (r"\bneoverse-v1\b", _ARM, "Neoverse V1"),
    (r"\bneoverse-v2\b|\bnvidia grace\b|^grace\b", _ARM, "Neoverse V2"),
    (r"\bneoverse-v3\b", _ARM, "Neoverse V3"),
]

EXACT, FAMILY, UNKNOWN = "exact", "family", "unknown"


class CpuInfo(NamedTuple):
    vendor: str | None
    microarchitecture: str | None
    hs23_per_core: float | None
    match: str


@dataclass(frozen=True)
class ReferenceRow:
    cpu_model_norm: str
    cpu_model_example: str
    vendor: str
    microarchitecture: str
    hs23_per_core: float | None
    hs06_per_core: float | None
    n_measurements: int
    source: str


# --------------------------------------------------------------------------------------------
# Pure Python
# --------------------------------------------------------------------------------------------

_COMPILED_STEPS = [
    (re.compile(p, re.ASCII), re.sub(r"\$(\d)", r"\\\1", r)) for p, r in NORMALISE_STEPS
]
_COMPILED_RULES = [(re.compile(p, re.ASCII), v, m) for p, v, m in FAMILY_RULES]


def normalise(model: str) -> str:
    """The matching key of a CPU model string (see NORMALISE_STEPS)."""
    s = model.lower()
    for pattern, repl in _COMPILED_STEPS:
        s = pattern.sub(repl, s)
    return s.strip(" ")


def family_of(norm: str) -> tuple[str, str] | None:
    """(vendor, microarchitecture) of the first family rule matching a normalised string."""
    for pattern, vendor, micro in _COMPILED_RULES:
        if pattern.search(norm):
            return vendor, micro
    return None


def _opt_float(value: str) -> float | None:
    return float(value) if value else None


def parse_reference(text: str) -> dict[str, ReferenceRow]:
    """Rows of the reference CSV, keyed by cpu_model_norm."""
    rows = {}
    for r in csv.DictReader(io.StringIO(text)):
        rows[r["cpu_model_norm"]] = ReferenceRow(
            cpu_model_norm=r["cpu_model_norm"],
            cpu_model_example=r["cpu_model_example"],
            vendor=r["vendor"],
            microarchitecture=r["microarchitecture"],
            hs23_per_core=_opt_float(r["hs23_per_core"]),
            hs06_per_core=_opt_float(r["hs06_per_core"]),
            n_measurements=int(r["n_measurements"]),
            source=r["source"],
        )
    return rows


@lru_cache(maxsize=1)
def reference_rows() -> dict[str, ReferenceRow]:
    """The packaged reference table (read once)."""
    text = resources.files("gridlake.reference").joinpath(REFERENCE_CSV).read_text(encoding="utf-8")
    return parse_reference(text)


def classify(model: str | None) -> CpuInfo:
    """Vendor, microarchitecture, measured HS23 per core and how the model was matched."""
    if model is None:
        return CpuInfo(None, None, None, UNKNOWN)
    norm = normalise(model)
    ref = reference_rows().get(norm)
    if ref is not None:
        return CpuInfo(ref.vendor, ref.microarchitecture, ref.hs23_per_core, EXACT)
    family = family_of(norm)
    if family is not None:
        return CpuInfo(family[0], family[1], None, FAMILY)
    return CpuInfo(None, None, None, UNKNOWN)


# --------------------------------------------------------------------------------------------
# Spark (built-in functions only, no UDFs)
# --------------------------------------------------------------------------------------------


def normalise_col(col: Column) -> Column:
    """The same normalisation as :func:`normalise`, as a Spark expression."""
    from pyspark.sql import functions as F

    out = F.lower(col)
    for pattern, repl in NORMALISE_STEPS:
        out = F.regexp_replace(out, pattern, repl)
    # Spark's trim removes spaces only, like str.strip(" ").
    return F.trim(out)


def family_rule_index(norm: Column) -> Column:
    """0-based index of the first matching family rule, null when none matches."""
    from pyspark.sql import functions as F

    idx = None
    for i, (pattern, _, _) in enumerate(FAMILY_RULES):
        cond = norm.rlike(pattern)
        idx = F.when(cond, F.lit(i)) if idx is None else idx.when(cond, F.lit(i))
    return idx


def reference_table(spark: SparkSession) -> DataFrame:
    """The packaged reference table as a small DataFrame (read in Python, no file source)."""
    from pyspark.sql.types import (
        DoubleType,
        IntegerType,
        StringType,
        StructField,
        StructType,
    )

    schema = StructType(
        [
            StructField("cpu_model_norm", StringType(), False),
            StructField("cpu_model_example", StringType(), False),
            StructField("vendor", StringType(), False),
            StructField("microarchitecture", StringType(), False),
            StructField("hs23_per_core", DoubleType(), True),
            StructField("hs06_per_core", DoubleType(), True),
            StructField("n_measurements", IntegerType(), False),
            StructField("source", StringType(), False),
        ]
    )
    from gridlake.spark import rows_frame

    rows = [
        tuple(getattr(r, c) for c in REFERENCE_COLUMNS) for _, r in sorted(reference_rows().items())
    ]
    return rows_frame(spark, rows, schema)


def with_cpu_info(
    df: DataFrame, model_col: str = "cpu_model", reference: DataFrame | None = None
) -> DataFrame:
    """Add cpu_model_norm, vendor, microarchitecture, reference_hs23_per_core and cpu_match.

    Exact matches (broadcast join on the normalised name) take vendor, microarchitecture and
    HS23 per core from the reference table; otherwise the family rules give vendor and
    microarchitecture (HS23 stays null); otherwise everything is null and cpu_match "unknown".
    """
    from pyspark.sql import functions as F

    if reference is None:
        reference = reference_table(df.sparkSession)
    ref = reference.select(
        F.col("cpu_model_norm").alias("_ref_norm"),
        F.col("vendor").alias("_ref_vendor"),
        F.col("microarchitecture").alias("_ref_micro"),
        F.col("hs23_per_core").cast("double").alias("_ref_hs23"),
    )
    rule_vendors = F.array(*[F.lit(v) for _, v, _ in FAMILY_RULES])
    rule_micros = F.array(*[F.lit(m) for _, _, m in FAMILY_RULES])

    out = df.withColumn("cpu_model_norm", normalise_col(F.col(model_col)))
    out = out.join(F.broadcast(ref), out["cpu_model_norm"] == ref["_ref_norm"], "left")
    out = out.withColumn("_rule", family_rule_index(F.col("cpu_model_norm")))
    exact = F.col("_ref_norm").isNotNull()
    family = F.col("_rule").isNotNull()
    return (
        out.withColumn(
            "vendor",
            F.when(exact, F.col("_ref_vendor")).when(family, rule_vendors[F.col("_rule")]),
        )
        .withColumn(
            "microarchitecture",
            F.when(exact, F.col("_ref_micro")).when(family, rule_micros[F.col("_rule")]),
        )
        .withColumn("reference_hs23_per_core", F.when(exact, F.col("_ref_hs23")))
        .withColumn(
            "cpu_match",
            F.when(exact, F.lit(EXACT)).when(family, F.lit(FAMILY)).otherwise(F.lit(UNKNOWN)),
        )
        .drop("_ref_norm", "_ref_vendor", "_ref_micro", "_ref_hs23", "_rule")
    )
