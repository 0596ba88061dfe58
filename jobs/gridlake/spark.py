"""The SparkSession, built from settings. The only place a session is created."""

from __future__ import annotations

import os
import shlex
import sys
import tempfile

from pyspark import SparkContext
from pyspark.sql import SparkSession

from gridlake.settings import SPARK_PACKAGES, Settings, get_settings, java_properties


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
        # 0700 whatever the caller's umask (make install resolves the jars with the shell's)
        (settings.state / "spark-tmp").mkdir(mode=0o700, parents=True, exist_ok=True)
        (settings.state / "logs").mkdir(mode=0o700, parents=True, exist_ok=True)
    # Python workers (the speed-factor fit's grouped numpy) run the driver's interpreter, whose
    # venv has numpy, pandas and pyarrow; on a cluster of other machines set PYSPARK_PYTHON (or
    # spark.pyspark.python) to the executors' environment.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(settings.spark_master)
    # The settings reach spark-submit in a 0600 properties file, not as --conf arguments (what
    # the builder's config() becomes): the metastore's password and GRIDLAKE_SPARK_CONF's
    # object-store keys would otherwise be on the driver's command line, which `ps` shows to
    # every local user. The JVM reads the file at launch; it is removed once the session is up.
    # A JVM already up (a session stopped and built again in one process) takes the settings
    # over py4j: no command line either, and the current settings rather than the first ones.
    if SparkContext._gateway is not None:
        for key, value in settings.spark_conf().items():
            builder = builder.config(key, value)
        spark = builder.enableHiveSupport().getOrCreate()
        spark.sparkContext.setLogLevel(os.environ.get("GRIDLAKE_SPARK_LOG_LEVEL", "WARN"))
        return spark
    run = settings.state / "run"
    run.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, props = tempfile.mkstemp(prefix="spark-", suffix=".properties", dir=run)  # mode 0600
    submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(java_properties(settings.spark_conf()))
        os.environ["PYSPARK_SUBMIT_ARGS"] = (
            f"--properties-file {shlex.quote(props)} {submit_args or 'pyspark-shell'}"
        )
        spark = builder.enableHiveSupport().getOrCreate()
    finally:
        if submit_args is None:
            os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
        else:
            os.environ["PYSPARK_SUBMIT_ARGS"] = submit_args
        os.unlink(props)
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
        os.umask(0o077)  # as the CLI: what this writes in the instance is the owner's alone
        _resolve()
