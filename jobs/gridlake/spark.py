"""The SparkSession, built from settings. The only place a session is created."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from gridlake.settings import SPARK_PACKAGES, Settings, get_settings


def get_spark(settings: Settings | None = None, app_name: str | None = None) -> SparkSession:
    """Return the active session or build one configured for gridlake.

    The application's name (in YARN's and Spark's UIs) is ``app_name``, else GRIDLAKE_APP_NAME
    (the CLI sets ``gridlake-<verb>``), else ``gridlake``."""
    settings = settings or get_settings()
    app_name = app_name or os.environ.get("GRIDLAKE_APP_NAME") or "gridlake"
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if settings.is_local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        (settings.state / "spark-tmp").mkdir(parents=True, exist_ok=True)
        (settings.state / "logs").mkdir(parents=True, exist_ok=True)
    # Python workers (the speed-factor fit's grouped numpy) run the driver's interpreter, whose
    # venv has numpy, pandas and pyarrow; on a cluster of other machines set PYSPARK_PYTHON (or
    # spark.pyspark.python) to the executors' environment.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(settings.spark_master)
    for key, value in settings.spark_conf().items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("GRIDLAKE_SPARK_LOG_LEVEL", "WARN"))
    return spark


def _resolve() -> None:
    """Start and stop a session once so the Spark packages land in the Ivy cache."""
    settings = get_settings()
    spark = get_spark(settings, app_name="gridlake-resolve")
    spark.stop()
    (settings.jars_dir / ".resolved").write_text(",".join(SPARK_PACKAGES) + "\n")


if __name__ == "__main__":
    import sys

    if "--resolve" in sys.argv:
        _resolve()
