"""The settings edge: the cluster's Hadoop version, the s3a jars, the instance's env file."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from gridlake.settings import REPO_ROOT, _load_instance_env, get_settings, hadoop_version


def test_cluster_daemons_run_the_hadoop_version_of_pyspark_client_jars() -> None:
    pom = (REPO_ROOT / "infra" / "hadoop" / "pom.xml").read_text()
    (declared,) = re.findall(r"<hadoop.version>([^<]+)</hadoop.version>", pom)
    assert declared == hadoop_version()


def test_an_s3a_root_resolves_hadoop_aws_of_that_version_and_hdfs_does_not() -> None:
    base = get_settings()
    s3 = dataclasses.replace(base, storage_root="s3a://grid-warehouse/gridlake").jar_conf()
    hdfs = dataclasses.replace(base, storage_root="hdfs://nn:8020/gridlake").jar_conf()
    assert f"org.apache.hadoop:hadoop-aws:{hadoop_version()}" in s3["spark.jars.packages"].split(
        ","
    )
    assert s3["spark.jars.ivy"].endswith("ivy")
    assert "hadoop-aws" not in hdfs.get("spark.jars.packages", "")
    # The project's own packages stay (cached jars or packages to resolve).
    assert ("spark.jars" in s3) or ("delta-spark" in s3["spark.jars.packages"])


def test_instance_env_file_fills_what_the_environment_leaves_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "cluster.env"
    f.write_text(
        "# written by cluster.sh\nGL_T_ONE=from-file\nGL_T_TWO=from-file\n\nGL_T_URL=a=b\n"
    )
    monkeypatch.delenv("GL_T_ONE", raising=False)
    monkeypatch.delenv("GL_T_URL", raising=False)
    monkeypatch.setenv("GL_T_TWO", "from-env")
    _load_instance_env(f)
    import os

    assert os.environ["GL_T_ONE"] == "from-file"
    assert os.environ["GL_T_TWO"] == "from-env"  # the environment wins
    assert os.environ["GL_T_URL"] == "a=b"  # only the first "=" splits
    monkeypatch.delenv("GL_T_ONE")
    _load_instance_env(tmp_path / "missing.env")  # no file: nothing happens
    assert "GL_T_ONE" not in os.environ


def test_spark_conf_keeps_secrets_off_arguments_and_escapes_properties() -> None:
    """`gridlake spark-conf` prints arguments without secrets and a properties file with them,
    escaped so that Java reads back every value as given (a backslash, a newline)."""
    import os
    import subprocess

    exe = get_settings().home / "venv" / "bin" / "gridlake"
    env = dict(os.environ)
    env["GRIDLAKE_SPARK_CONF"] = (
        "spark.hadoop.fs.s3a.secret.key=s3cr3t-value;spark.gridlake.probe=C:\\dir"
    )
    args = subprocess.run([str(exe), "spark-conf"], capture_output=True, text=True, env=env,
                          timeout=120, check=True).stdout  # fmt: skip
    props = subprocess.run([str(exe), "spark-conf", "--properties"], capture_output=True,
                           text=True, env=env, timeout=120, check=True).stdout  # fmt: skip
    assert "s3cr3t-value" not in args
    assert "spark.hadoop.fs.s3a.secret.key=<redacted" in args
    assert "spark.gridlake.probe=C:\\dir" in args.splitlines()
    assert "spark.hadoop.fs.s3a.secret.key=s3cr3t-value" in props.splitlines()
    assert "spark.gridlake.probe=C:\\\\dir" in props.splitlines()  # Java reads C:\dir
