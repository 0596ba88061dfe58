"""The Derby metastore asks for a password, and no process shows it (or any Spark setting) on its
command line (#25): infra/derby.sh turns BUILTIN authentication on with a password generated per
instance into a 0600 file; the jobs' Spark sessions get their settings from a 0600 properties file
that gridlake.spark removes once the JVM has read it.

Uses the test session's own Derby and SparkSession (a real metastore behind real tables)."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from gridlake.settings import METASTORE_DB_USER, get_settings

pytestmark = pytest.mark.integration


def _ij(url: str, settings, workdir: Path) -> str:
    """Connect with Derby's own ij tool (in ``workdir``: it leaves a derby.log where it runs)."""
    libs = settings.home / "derby" / "libs"
    run = subprocess.run(
        ["java", "-cp", f"{libs}/*", f"-Dderby.stream.error.file={workdir / 'derby.log'}",
         "org.apache.derby.tools.ij"],
        input=f"connect '{url}';\nshow schemas;\nexit;\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=workdir,
    )  # fmt: skip
    return run.stdout + run.stderr


def test_derby_refuses_clients_without_the_instance_password(spark, derby, tmp_path) -> None:
    settings = get_settings()
    pw_file = settings.metastore_db_password_file
    assert stat.S_IMODE(pw_file.stat().st_mode) == 0o600
    password = pw_file.read_text().strip()
    assert len(password) >= 24 and password.isalnum()
    props = settings.state / "derby" / "derby.properties"
    assert stat.S_IMODE(props.stat().st_mode) == 0o600

    # The session's catalog works through the password (a real metastore call).
    spark.sql("CREATE DATABASE IF NOT EXISTS auth_probe")
    assert "auth_probe" in {r[0] for r in spark.sql("SHOW DATABASES").collect()}
    spark.sql("DROP DATABASE auth_probe")

    base = f"jdbc:derby://127.0.0.1:{settings.derby_port}/metastore_db"
    refused = {
        "no user": base,
        "wrong password": f"{base};user={METASTORE_DB_USER};password=not-{password}",
        "unknown user": f"{base};user=intruder;password={password}",
    }
    for why, url in refused.items():
        out = _ij(url, settings, tmp_path)
        assert "08004" in out, f"{why}: Derby did not refuse the connection:\n{out}"
    out = _ij(f"{base};user={METASTORE_DB_USER};password={password}", settings, tmp_path)
    assert "08004" not in out and "APP" in out, out  # the schemas are listed


def test_no_spark_setting_or_password_on_a_command_line(spark) -> None:
    """The test session's own driver JVM: none of the settings (warehouse root, Derby URL, the
    password) on its command line, and the properties file it was launched with is gone."""
    settings = get_settings()
    password = settings.metastore_db_password_file.read_text().strip()
    assert spark.conf.get("spark.hadoop.javax.jdo.option.ConnectionPassword") == password
    jvm_pid = spark.sparkContext._jvm.ProcessHandle.current().pid()
    args = Path(f"/proc/{jvm_pid}/cmdline").read_bytes().decode().split("\0")
    assert any("org.apache.spark.deploy.SparkSubmit" in a for a in args), args
    leaked = [a for a in args if password in a or "jdbc:derby" in a or "warehouse.dir" in a]
    assert not leaked, leaked
    assert not list((settings.state / "run").glob("spark-*.properties"))
