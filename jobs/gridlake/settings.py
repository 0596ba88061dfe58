"""One place for configuration: where data lives, which Spark runs it, where Kafka is.

Everything comes from environment variables with embedded local defaults, so the same code runs
on a laptop (``GRIDLAKE_ENV=local``, the default) and on a cluster (``GRIDLAKE_ENV=cluster``):

- ``GRIDLAKE_HOME``: shared installs (venvs, jars); default ``<repo>/.gridlake``.
- ``GRIDLAKE_INSTANCE``: names the state folder; ``demo`` by default, ``test`` for the suite.
- ``GRIDLAKE_SPARK_MASTER``: ``local[2]``; on a cluster ``spark://..``, ``yarn``, ``k8s://..``.
- ``GRIDLAKE_STORAGE_ROOT``: ``$GRIDLAKE_HOME/<instance>/warehouse``; e.g. ``s3a://bucket/gl``.
- ``GRIDLAKE_KAFKA_BOOTSTRAP``: ``127.0.0.1:9092`` (plus the port offset); the brokers.
- ``GRIDLAKE_METASTORE_URI``: unset (a local Derby network server); ``thrift://host:9083``.
- ``GRIDLAKE_SHUFFLE_PARTITIONS``: 4 locally; a few hundred on a cluster.
- ``GRIDLAKE_DRIVER_MEMORY`` / ``GRIDLAKE_PAGE_SIZE``: local mode only, ``2g`` / ``4m`` (the
  Thrift Server's memory is ``GRIDLAKE_THRIFT_MEMORY``, ``2g``).
- ``GRIDLAKE_SPARK_CONF``: extra ``key=value;key=value`` Spark settings (e.g. S3 credentials).
- ``GRIDLAKE_REFINE_MAX_BYTES``: ``64m``; the bronze Parquet one refine micro-batch takes at
  most (~500,000 job records): a backlog (days of jobs after an outage) is refined in bounded
  batches instead of one that outgrows the driver's memory. Raise it with the driver's memory.

Ports of the local services are shifted by ``GRIDLAKE_PORT_OFFSET`` (0 for ``demo``, 100 for
``test``) exactly as ``infra/env.sh`` does, so both instances can run side by side.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]  # jobs/gridlake/settings.py
SCHEMAS_DIR = REPO_ROOT / "schemas"
SQL_DIR = REPO_ROOT / "sql"

TOPICS = {
    "jobs": "grid.jobs",
    "nodes": "grid.nodes",
    "network": "grid.network",
    "accounting_summaries": "grid.accounting_summaries",
    "deadletter": "grid.deadletter",
}

_DEFAULT_OFFSETS = {"demo": 0, "test": 100, "cluster": 500}

# Spark packages resolved from Maven Central (cached in $GRIDLAKE_HOME/ivy).
# The Derby metastore's user: the owner of the schema (APP) that catalogs made before Derby asked
# for a password were created in, so an existing instance keeps its catalog.
METASTORE_DB_USER = "APP"


def java_properties(conf: dict[str, str]) -> str:
    """``conf`` as a Java properties file (for ``spark-submit --properties-file``)."""
    lines = []
    for key, value in conf.items():
        escaped = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        lines.append(f"{key}={escaped}\n")
    return "".join(lines)


SPARK_PACKAGES = (
    "io.delta:delta-spark_2.13:4.0.0",
    "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0",
)


@cache
def hadoop_version() -> str:
    """The Hadoop version of pyspark's hadoop-client-api jar (3.4.1 for pyspark 4.0): the
    version of the cluster's daemons (infra/hadoop/pom.xml) and of hadoop-aws."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    found = sorted(jars.glob("hadoop-client-api-*.jar"))
    if not found:
        raise RuntimeError(f"no hadoop-client-api jar in {jars}")
    return found[-1].name.removeprefix("hadoop-client-api-").removesuffix(".jar")


def _env(name: str, default: str) -> str:
    value = os.environ.get(name, "")
    return value if value else default


@dataclass(frozen=True)
class Settings:
    env: str
    home: Path
    instance: str
    port_offset: int
    spark_master: str
    storage_root: str
    kafka_bootstrap: str
    metastore_uri: str | None
    shuffle_partitions: int
    derby_port: int
    thrift_port: int
    superset_port: int
    extra_spark_conf: dict[str, str] = field(default_factory=dict)
    # gold groups `analyze` builds side by side in one session (independent groups only: a
    # group starts once the groups it reads are written); 1 = one after the other
    analyze_workers: int = 2
    # the bronze bytes (Parquet files) one refine micro-batch takes at most (Delta's soft limit
    # maxBytesPerTrigger: whole files, at least one); a byte string such as 64m or 1g
    refine_max_bytes: str = "64m"

    @property
    def is_local(self) -> bool:
        return self.env == "local"

    @property
    def state(self) -> Path:
        """Folder of this instance's local state (logs, PIDs, reports, secrets)."""
        return self.home / self.instance

    @property
    def checkpoint_root(self) -> str:
        return f"{self.storage_root.rstrip('/')}/_checkpoints"

    def table_path(self, database: str, table: str) -> str:
        return f"{self.storage_root.rstrip('/')}/{database}/{table}"

    @property
    def derby_jdbc_url(self) -> str:
        return f"jdbc:derby://127.0.0.1:{self.derby_port}/metastore_db;create=true"

    @property
    def metastore_db_password_file(self) -> Path:
        """The Derby metastore's password (0600; generated by infra/derby.sh on first start)."""
        return self.state / "secrets" / "metastore_db.password"

    @property
    def jars_dir(self) -> Path:
        return self.home / "ivy" / "jars"

    def jar_conf(self) -> dict[str, str]:
        """Resolve the packages with Ivy once; afterwards name the cached jars (quiet, fast).

        An ``s3a://`` storage root adds ``hadoop-aws`` at the Hadoop version of pyspark's own
        hadoop-client jars (with its AWS SDK bundle: resolved by Ivy on first use, only then)."""
        marker = self.jars_dir / ".resolved"
        if marker.is_file():
            jars = sorted(str(p) for p in self.jars_dir.glob("*.jar"))
            conf = {"spark.jars": ",".join(jars)}
        else:
            conf = {"spark.jars.packages": ",".join(SPARK_PACKAGES)}
        if self.storage_root.startswith("s3a://"):
            aws = f"org.apache.hadoop:hadoop-aws:{hadoop_version()}"
            conf["spark.jars.packages"] = ",".join(
                x for x in (conf.get("spark.jars.packages"), aws) if x
            )
        if "spark.jars.packages" in conf:
            conf["spark.jars.ivy"] = str(self.home / "ivy")
        return conf

    def spark_conf(self) -> dict[str, str]:
        """Every Spark setting gridlake relies on; shared by jobs, tests and the Thrift Server."""
        conf = {
            "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            "spark.sql.catalogImplementation": "hive",
            "spark.sql.warehouse.dir": self.storage_root,
            "spark.sql.shuffle.partitions": str(self.shuffle_partitions),
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.json.enablePartialResults": "true",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.debug.maxToStringFields": "500",
            # Constraint propagation grows combinatorially with wide expression plans (the
            # contract validation and the CPU family rules are ~120 predicates): it once spent
            # minutes in InferFiltersFromConstraints before any data moved. It buys nothing here.
            "spark.sql.constraintPropagation.enabled": "false",
            # A long-lived session (the gridlake server, the Thrift Server, a test session)
            # frees the cached and checkpointed blocks of dropped frames at the JVM's next GC:
            # one every two minutes rather than the default thirty.
            "spark.cleaner.periodicGC.interval": "2min",
            # Jobs submitted side by side from threads of one session (analyze's groups, each
            # in a pool of its own: gridlake.gold.analyze) share the cores fairly instead of
            # queueing in submission order, where a group's short gate and commit jobs wait for
            # the other group's long stages. At the bench's full scale an incremental analyze
            # (four groups, two workers, three runs each by hand, 2026-12-07) took 1-5 s less.
            "spark.scheduler.mode": "FAIR",
            # Spark compiles each query's generated code (Janino, then the JVM's JIT) unless
            # the same code is in its cache of compiled classes, 100 by default. An analyze
            # run submits ~450 Spark jobs of a few hundred distinct shapes, so the cache
            # thrashed: a warm incremental analyze at standard scale spent 25-31 s of its ~90 s
            # of CPU in the JIT's compiler threads and recompiled in its tasks. With 5,000 the
            # same run took 39-36 s instead of 48 s (2026-12-07, four groups, two workers), its
            # tasks' CPU 14 s instead of 24 s. A long-lived session (the gridlake server, the
            # Thrift Server, a test session) keeps the classes between its runs.
            "spark.sql.codegen.cache.maxEntries": "5000",
            "spark.databricks.delta.schema.autoMerge.enabled": "false",
            "spark.databricks.delta.snapshotPartitions": "2",
            # A full VACUUM lists a table's folder and joins the listing with the snapshot in
            # as many tasks as this (Spark's default 10,000): ~170,000 one-millisecond tasks and
            # two minutes for a table of three files on two cores. The shuffle's partitions are
            # plenty for gridlake's tables (a partition folder per day at most).
            "spark.sql.sources.parallelPartitionDiscovery.parallelism": str(
                max(self.shuffle_partitions, 8)
            ),
            "spark.hadoop.hive.metastore.schema.verification": "false",
            "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
            # Hadoop's file systems set each file's mode themselves (0644, directories 0755,
            # whatever the process's umask): the warehouse's files readable by their owner only,
            # as everything else of an instance (infra/env.sh's umask 077).
            "spark.hadoop.fs.permissions.umask-mode": "077",
            # Options redacted in plans, logs and errors: Spark's default (url) and the Kafka
            # source's sign-in (kafka.sasl.jaas.config carries a password)
            "spark.sql.redaction.options.regex": "(?i)url|jaas|password|secret|token",
        }
        conf.update(self.jar_conf())
        if self.metastore_uri:
            conf["spark.hadoop.hive.metastore.uris"] = self.metastore_uri
        else:
            derby_libs = self.home / "derby" / "libs"
            conf.update(
                {
                    "spark.hadoop.javax.jdo.option.ConnectionURL": self.derby_jdbc_url,
                    "spark.hadoop.javax.jdo.option.ConnectionDriverName": (
                        "org.apache.derby.client.ClientAutoloadedDriver"
                    ),
                    "spark.driver.extraClassPath": f"{derby_libs}/*",
                }
            )
            # Derby asks for a user and password (infra/derby.sh): the schema's owner, APP,
            # with the instance's generated password. It reaches the JVM in a 0600 properties
            # file (gridlake.spark, thrift.sh), never on a command line.
            if self.metastore_db_password_file.is_file():
                conf["spark.hadoop.javax.jdo.option.ConnectionUserName"] = METASTORE_DB_USER
                conf["spark.hadoop.javax.jdo.option.ConnectionPassword"] = (
                    self.metastore_db_password_file.read_text().strip()
                )
        conf["spark.driver.extraJavaOptions"] = (
            f"-Dlog4j2.configurationFile={REPO_ROOT / 'infra' / 'spark' / 'log4j2.properties'} "
            f"-Dderby.stream.error.file={self.state / 'logs' / 'derby-client.log'} "
            + _env("GRIDLAKE_DRIVER_JAVA_OPTIONS", "")
        ).strip()
        if self.is_local:
            conf.update(
                {
                    "spark.driver.host": "127.0.0.1",
                    "spark.driver.bindAddress": "127.0.0.1",
                    "spark.ui.enabled": "false",
                    "spark.local.dir": str(self.state / "spark-tmp"),
                    "spark.driver.memory": _env("GRIDLAKE_DRIVER_MEMORY", "2g"),
                    # Spark sizes a sort/aggregation page from driver memory / cores / 16 (32 MiB
                    # at 2g on 2 cores) and a plan with many joins and windows in one stage holds
                    # a page per operator: with cached data taking half the memory, a task then
                    # fails with "UNABLE_TO_ACQUIRE_MEMORY ... got 0". Small pages fit many.
                    "spark.buffer.pageSize": _env("GRIDLAKE_PAGE_SIZE", "4m"),
                    # Adaptive query execution stays on (Spark's default). Turned off, two test
                    # modules of small aggregations ran 8-17 % faster (2026-11-28, quiet machine),
                    # but in CI the MERGE-heavy tests ran slower (planted bad records 130 s against
                    # 59 s): likely the broadcast join AQE picks at run time for refine's MERGE of
                    # a micro-batch, a source Spark cannot size before it runs (not isolated).
                    "spark.sql.adaptive.coalescePartitions.initialPartitionNum": str(
                        self.shuffle_partitions
                    ),
                }
            )
        conf.update(self.extra_spark_conf)
        return conf


# The settings `make cluster-up` writes for its instance (GRIDLAKE_ENV=cluster, the master, the
# storage root, HADOOP_CONF_DIR, ...): KEY=VALUE lines in the instance's state folder.
INSTANCE_ENV_FILE = "cluster.env"


def _load_instance_env(path: Path) -> None:
    """Put the instance file's settings into the environment, where nothing set them already
    (the environment wins; Spark's launcher and Hadoop's client read HADOOP_CONF_DIR from it)."""
    if not path.is_file():
        return
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            if not os.environ.get(key.strip()):
                os.environ[key.strip()] = value.strip()


@cache
def get_settings() -> Settings:
    """Read the environment once per process."""
    home = Path(_env("GRIDLAKE_HOME", str(REPO_ROOT / ".gridlake"))).resolve()
    instance = _env("GRIDLAKE_INSTANCE", "demo")
    _load_instance_env(home / instance / INSTANCE_ENV_FILE)
    env = _env("GRIDLAKE_ENV", "local")
    if env not in ("local", "cluster"):
        raise ValueError(f"GRIDLAKE_ENV must be 'local' or 'cluster', not {env!r}")
    if instance not in _DEFAULT_OFFSETS and not os.environ.get("GRIDLAKE_PORT_OFFSET"):
        raise ValueError(
            f"instance {instance!r} needs GRIDLAKE_PORT_OFFSET: two instances must not share ports"
        )
    offset = int(_env("GRIDLAKE_PORT_OFFSET", str(_DEFAULT_OFFSETS.get(instance, 0))))
    kafka_port = int(_env("GRIDLAKE_KAFKA_PORT", str(9092 + offset)))
    storage_root = _env("GRIDLAKE_STORAGE_ROOT", str(home / instance / "warehouse"))
    if env == "cluster" and storage_root.startswith(str(home)):
        raise ValueError(
            "GRIDLAKE_ENV=cluster needs GRIDLAKE_STORAGE_ROOT (e.g. s3a://bucket/gridlake)"
        )
    extra = {}
    for item in _env("GRIDLAKE_SPARK_CONF", "").split(";"):
        if "=" in item:
            key, value = item.split("=", 1)
            extra[key.strip()] = value.strip()
    return Settings(
        env=env,
        home=home,
        instance=instance,
        port_offset=offset,
        spark_master=_env("GRIDLAKE_SPARK_MASTER", "local[2]"),
        storage_root=storage_root,
        kafka_bootstrap=_env("GRIDLAKE_KAFKA_BOOTSTRAP", f"127.0.0.1:{kafka_port}"),
        metastore_uri=os.environ.get("GRIDLAKE_METASTORE_URI") or None,
        shuffle_partitions=int(_env("GRIDLAKE_SHUFFLE_PARTITIONS", "4")),
        derby_port=int(_env("GRIDLAKE_DERBY_PORT", str(1527 + offset))),
        thrift_port=int(_env("GRIDLAKE_THRIFT_PORT", str(10000 + offset))),
        superset_port=int(_env("GRIDLAKE_SUPERSET_PORT", str(8088 + offset))),
        extra_spark_conf=extra,
        analyze_workers=max(1, int(_env("GRIDLAKE_ANALYZE_WORKERS", "2"))),
        refine_max_bytes=_env("GRIDLAKE_REFINE_MAX_BYTES", "64m"),
    )
