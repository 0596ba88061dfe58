"""The link-congestion predictor: labels, training with leave-one-link-out evaluation, the
saved model, and gold.network_link_status."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.classification import GBTClassifier, MultilayerPerceptronClassifier
from pyspark.ml.evaluation import BinaryClassificationEvaluator
from pyspark.ml.feature import StandardScaler, VectorAssembler
from pyspark.ml.functions import vector_to_array
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from gridlake.gold.network.features import (
    _floor_ts,
    interval_features,
    latency_samples,
    path_baselines,
)
from gridlake.gold.network.params import (
    FEATURE_COLUMNS,
    INTERVAL_SECONDS,
    LINK,
    MLP_HIDDEN_LAYERS,
    MODEL_TYPES,
    UTILISATION_LABEL,
    WINDOW_SAMPLES,
)
from gridlake.gold.network.tables import GOLD_NETWORK_LINK_STATUS
from gridlake.settings import Settings, get_settings
from gridlake.spark import rows_frame

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# The predictor
# --------------------------------------------------------------------------------------------


def interval_labels(labels: DataFrame, threshold: float = UTILISATION_LABEL) -> DataFrame:
    """(src_site, dst_site, ts, utilisation) -> one row per link and interval *before* the one
    measured: ``label`` = 1.0 when the mean utilisation of the next interval exceeds
    ``threshold``."""
    return (
        labels.withColumn("ts", F.col("ts").cast("timestamp"))
        .withColumn("_next", _floor_ts("ts", INTERVAL_SECONDS))
        .groupBy(*LINK, "_next")
        .agg(F.avg(F.col("utilisation").cast("double")).alias("next_utilisation"))
        .select(
            *LINK,
            (F.col("_next") - F.expr(f"INTERVAL {INTERVAL_SECONDS} SECONDS")).alias(
                "interval_start"
            ),
            "next_utilisation",
            (F.col("next_utilisation") > threshold).cast("double").alias("label"),
        )
    )


def _classifier(model_type: str, n_features: int, seed: int) -> tuple[list[object], dict]:
    if model_type == "mlp":
        layers = [n_features, *MLP_HIDDEN_LAYERS, 2]
        params = {"layers": layers, "maxIter": 80, "solver": "l-bfgs", "tol": 1e-6, "seed": seed}
        scaler = StandardScaler(
            inputCol="_raw_features", outputCol="features", withMean=True, withStd=True
        )
        clf = MultilayerPerceptronClassifier(featuresCol="features", labelCol="label", **params)
        return [scaler, clf], params
    if model_type == "gbt":
        params = {"maxIter": 25, "maxDepth": 4, "stepSize": 0.1, "subsamplingRate": 0.8,
                  "seed": seed}  # fmt: skip
        clf = GBTClassifier(featuresCol="_raw_features", labelCol="label", **params)
        return [clf], params
    raise ValueError(f"unknown model type {model_type!r}: expected one of {MODEL_TYPES}")


def _fit(training: DataFrame, model_type: str, seed: int) -> tuple[PipelineModel, dict]:
    assembler = VectorAssembler(inputCols=list(FEATURE_COLUMNS), outputCol="_raw_features")
    stages, params = _classifier(model_type, len(FEATURE_COLUMNS), seed)
    return Pipeline(stages=[assembler, *stages]).fit(training), params


def _predict(model: PipelineModel, df: DataFrame) -> DataFrame:
    """Add ``p_util_over_70_next`` (probability of class 1) to rows with FEATURE_COLUMNS."""
    scored = model.transform(df)
    p = vector_to_array(F.col("probability"))[1]
    return scored.select(*df.columns, p.alias("p_util_over_70_next"))


def _metrics(scored: DataFrame, score: str, threshold: float) -> dict[str, float | int | None]:
    """MSE, AUC, precision and recall of ``score`` against ``label`` (one small aggregate)."""
    pred = F.col(score) >= threshold
    pos = F.col("label") == 1.0
    row = scored.agg(
        F.count(F.lit(1)).alias("n"),
        F.sum(F.col("label")).alias("positives"),
        F.avg((F.col(score) - F.col("label")) ** 2).alias("mse"),
        F.count(F.when(pred & pos, 1)).alias("tp"),
        F.count(F.when(pred, 1)).alias("predicted"),
    ).first()
    assert row is not None
    n, positives = int(row["n"]), int(row["positives"] or 0)
    auc = None
    if 0 < positives < n:
        evaluator = BinaryClassificationEvaluator(
            rawPredictionCol=score, labelCol="label", metricName="areaUnderROC"
        )
        auc = float(evaluator.evaluate(scored.select(score, "label")))
    tp, predicted = int(row["tp"]), int(row["predicted"])
    return {
        "n": n,
        "positives": positives,
        "mse": float(row["mse"]) if row["mse"] is not None else None,
        "auc": auc,
        "precision": tp / predicted if predicted else None,
        "recall": tp / positives if positives else None,
    }


@dataclass
class CongestionModel:
    """The result of ``train_congestion_model``: the refitted model and its evaluation."""

    model: PipelineModel
    model_type: str
    run_id: str
    runs: DataFrame


# Labelled intervals per partition of the training set (at most one partition per core).
ROWS_PER_TRAINING_PARTITION = 250_000


def training_partitions(rows: int, cores: int) -> int:
    """The partitions of a training set of ``rows`` rows on ``cores`` cores: one per
    ``ROWS_PER_TRAINING_PARTITION`` rows, at least 1, at most ``cores``. A fit is an iterative
    algorithm of ~100 small jobs (a tree level of GBT, an l-bfgs step of the MLP); on a set of
    a few hundred thousand rows their cost is the scheduling of tasks, not the data: on the test
    grid's 40,000 intervals one partition fits in half the time of ``spark.sql.shuffle.partitions``
    (4 there, 200 by default). Larger sets are spread over the cores, never over more
    partitions than cores (each step waits for its slowest task)."""
    return max(1, min(cores, -(-rows // ROWS_PER_TRAINING_PARTITION)))


def _labelled(features: DataFrame, labels: DataFrame) -> DataFrame:
    """Intervals with a full observation window and a label, in ``training_partitions``
    partitions, hash-partitioned and sorted by key, so every run on the same cores sees the
    same rows in the same order: l-bfgs (MLP) otherwise lands elsewhere from one run to the
    next. One count of the joined rows (a small aggregate) decides the partitions."""
    lab = interval_labels(labels)
    keys = [*LINK, "src_host", "dst_host", "interval_start"]
    joined = (
        features.filter(F.col("window_samples") >= WINDOW_SAMPLES)
        .join(lab, [*LINK, "interval_start"], "inner")
        .select(*keys, "quiet", *FEATURE_COLUMNS, "label")
        .withColumn("_empirical", F.when(F.col("quiet"), 0.0).otherwise(1.0))
    )
    cores = features.sparkSession.sparkContext.defaultParallelism
    parts = training_partitions(joined.count(), cores)
    return joined.repartition(parts, *keys).sortWithinPartitions(*keys)


def _default_held_out(data: DataFrame, n: int) -> list[tuple[str, str]]:
    """The ``n`` links with the most positive labels, then the most intervals that are not quiet
    (where the empirical filter raises false alarms), ties by name. One row per link reaches the
    driver, so bounded by the number of links."""
    rows = (
        data.groupBy(*LINK)
        .agg(
            F.sum("label").alias("positives"),
            F.count(F.when(~F.col("quiet"), 1)).alias("not_quiet"),
        )
        .orderBy(F.col("positives").desc(), F.col("not_quiet").desc(), *LINK)
        .limit(n)
        .collect()
    )
    return [(r["src_site"], r["dst_site"]) for r in rows]


def train_congestion_model(
    features: DataFrame,
    labels: DataFrame,
    *,
    model_types: Sequence[str] = MODEL_TYPES,
    held_out: Sequence[tuple[str, str]] | None = None,
    n_held_out: int = 3,
    threshold: float = 0.5,
    seed: int = 7,
    run_id: str | None = None,
    trained_at: datetime | None = None,
) -> CongestionModel:
    """Leave-one-link-out evaluation of each model type, then the best (pooled AUC) refitted on
    every link.

    ``features``: ``interval_features`` output; ``labels``: (src_site, dst_site, ts,
    utilisation), the planted utilisation in tests or SNMP utilisation in production. Only
    scalar metrics reach the driver; the labelled set is cached while the models train.
    """
    run_id = run_id or uuid.uuid4().hex
    trained_at = trained_at or datetime.now(UTC)
    data = _labelled(features, labels).cache()
    try:
        links = list(held_out) if held_out is not None else _default_held_out(data, n_held_out)
        rows: list[dict[str, object]] = []
        pooled: dict[str, list[DataFrame]] = {m: [] for m in model_types}
        params_of: dict[str, dict] = {}
        for src, dst in links:
            is_link = (F.col("src_site") == src) & (F.col("dst_site") == dst)
            train, test = data.filter(~is_link), data.filter(is_link)
            n_train = train.count()
            empirical = _metrics(test, "_empirical", 0.5)
            for m in model_types:
                model, params_of[m] = _fit(train, m, seed)
                scored = _predict(model, test).cache()
                met = _metrics(scored, "p_util_over_70_next", threshold)
                pooled[m].append(scored)
                rows.append(
                    _run_row(m, "held_out_link", src, dst, n_train, met, empirical, threshold)
                )
        n_all = data.count()
        best, best_auc = model_types[0], -1.0
        for m in model_types:
            if not pooled[m]:
                continue
            union = pooled[m][0]
            for df in pooled[m][1:]:
                union = union.unionByName(df)
            met = _metrics(union, "p_util_over_70_next", threshold)
            empirical = _metrics(union, "_empirical", 0.5)
            rows.append(_run_row(m, "pooled", None, None, None, met, empirical, threshold))
            if (met["auc"] or -1.0) > best_auc:
                best, best_auc = m, float(met["auc"] or -1.0)
            for df in pooled[m]:
                df.unpersist()
        final, params_of[best] = _fit(data, best, seed)
        rows.append(_run_row(best, "final", None, None, n_all, None, None, threshold))
    finally:
        data.unpersist()
    runs = _runs_frame(features, rows, run_id, best, params_of, trained_at)
    return CongestionModel(model=final, model_type=best, run_id=run_id, runs=runs)


def _run_row(
    model_type: str,
    scope: str,
    src: str | None,
    dst: str | None,
    n_train: int | None,
    met: dict[str, float | int | None] | None,
    empirical: dict[str, float | int | None] | None,
    threshold: float,
) -> dict[str, object]:
    met = met or {}
    empirical = empirical or {}
    return {
        "model_type": model_type,
        "scope": scope,
        "held_out_src_site": src,
        "held_out_dst_site": dst,
        "train_rows": n_train,
        "test_rows": met.get("n"),
        "test_positives": met.get("positives"),
        "threshold": float(threshold),
        "mse": met.get("mse"),
        "auc": met.get("auc"),
        "precision": met.get("precision"),
        "recall": met.get("recall"),
        "empirical_mse": empirical.get("mse"),
        "empirical_auc": empirical.get("auc"),
        "empirical_precision": empirical.get("precision"),
        "empirical_recall": empirical.get("recall"),
    }


_RUNS_SCHEMA = StructType(
    [
        StructField("run_id", StringType()),
        StructField("model_type", StringType()),
        StructField("scope", StringType()),
        StructField("features", ArrayType(StringType())),
        StructField("params", StringType()),
        StructField("held_out_src_site", StringType()),
        StructField("held_out_dst_site", StringType()),
        StructField("train_rows", LongType()),
        StructField("test_rows", LongType()),
        StructField("test_positives", LongType()),
        StructField("threshold", DoubleType()),
        StructField("mse", DoubleType()),
        StructField("auc", DoubleType()),
        StructField("precision", DoubleType()),
        StructField("recall", DoubleType()),
        StructField("empirical_mse", DoubleType()),
        StructField("empirical_auc", DoubleType()),
        StructField("empirical_precision", DoubleType()),
        StructField("empirical_recall", DoubleType()),
        StructField("selected", BooleanType()),
        StructField("trained_at", TimestampType()),
    ]
)


def _runs_frame(
    like: DataFrame,
    rows: list[dict[str, object]],
    run_id: str,
    best: str,
    params_of: dict[str, dict],
    trained_at: datetime,
) -> DataFrame:
    def _num(v: object, kind: type) -> object:
        return None if v is None else kind(v)

    data = []
    for r in rows:
        m = str(r["model_type"])
        data.append(
            (
                run_id,
                m,
                r["scope"],
                list(FEATURE_COLUMNS),
                json.dumps(params_of.get(m, {}), sort_keys=True),
                r["held_out_src_site"],
                r["held_out_dst_site"],
                _num(r["train_rows"], int),
                _num(r["test_rows"], int),
                _num(r["test_positives"], int),
                _num(r["threshold"], float),
                *(_num(r[k], float) for k in ("mse", "auc", "precision", "recall")),
                *(
                    _num(r[k], float)
                    for k in (
                        "empirical_mse",
                        "empirical_auc",
                        "empirical_precision",
                        "empirical_recall",
                    )
                ),
                m == best,
                trained_at,
            )
        )
    return rows_frame(like.sparkSession, data, _RUNS_SCHEMA)


def save_model(
    model: PipelineModel, settings: Settings | None = None, name: str = "network_congestion"
) -> str:
    """Write the fitted predictor under ``<storage root>/models/<name>`` (overwriting); return
    the path. The only function here with a side effect."""
    path = f"{(settings or get_settings()).storage_root.rstrip('/')}/models/{name}"
    model.write().overwrite().save(path)
    return path


def load_model(settings: Settings | None = None, name: str = "network_congestion") -> PipelineModel:
    """The predictor saved by ``save_model``."""
    path = f"{(settings or get_settings()).storage_root.rstrip('/')}/models/{name}"
    return PipelineModel.load(path)


# --------------------------------------------------------------------------------------------
# gold.network_link_status
# --------------------------------------------------------------------------------------------


def _status_from_features(features: DataFrame, model: PipelineModel | None) -> DataFrame:
    if model is None:
        out = features.withColumn("p_util_over_70_next", F.lit(None).cast("double"))
    else:
        out = _predict(model, features)
    return GOLD_NETWORK_LINK_STATUS.conform(out)


def network_link_status(network: DataFrame, model: PipelineModel | None = None) -> DataFrame:
    """silver.network -> gold.network_link_status (predictions only with a ``model``)."""
    samples = latency_samples(network)
    features = interval_features(samples, path_baselines(samples))
    return _status_from_features(features, model)
