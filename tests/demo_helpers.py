"""What `make demo` prints and leaves behind, checked the same way by the demo test (make
test-demo: the shipped demo on its own instance) and by make test's warehouse (conftest's
``made_demo``: the demo week through `make demo`, cold then warm, on the test instance)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from gridlake.settings import REPO_ROOT


def record(**figures: object) -> None:
    """Add figures to ``$GRIDLAKE_HOME/bench-results/results-demo.json`` (key ``demo``)."""
    home = Path(os.environ.get("GRIDLAKE_HOME", REPO_ROOT / ".gridlake"))
    out = home / "bench-results" / "results-demo.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    results = json.loads(out.read_text()) if out.exists() else {}
    demo = results.setdefault("demo", {})
    demo.update(figures)
    demo["measured_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    demo["load_average_1m"] = round(os.getloadavg()[0], 2)
    out.write_text(json.dumps(results, indent=2) + "\n")


def steps(state: Path) -> dict[str, int]:
    """The seconds of each step of the last demo run (infra/demo.sh's demo-steps.tsv)."""
    tsv = state / "logs" / "demo-steps.tsv"
    if not tsv.is_file():
        return {}
    return {k: int(v) for k, v in (ln.split("\t") for ln in tsv.read_text().splitlines() if ln)}


def check_summary(
    out: str,
    state: Path,
    weeks: list[str],
    env: dict[str, str],
    *,
    tries: bool,
    offset: int,
    n_sites: int,
) -> None:
    """The end of `make demo`'s output: the efficiency table of the last week (one row per site,
    least efficient first), the report folders of the expected ISO weeks, the URLs on loopback
    and the login files they name; with ``tries``, each printed "Try" command run as printed."""
    assert "gridlake demo is up" in out, out[-4000:]
    table = [ln for ln in out.splitlines() if ln.startswith("|") and "|" in ln[1:]]
    assert table and "cpu_eff" in table[0], out[-4000:]
    rows = [ln for ln in table[1:] if not set(ln) <= set("|+-= ")]
    assert len(rows) == n_sites, table
    effs = [float(cell) for r in rows for cell in [r.split("|")[2].strip()]]
    assert effs == sorted(effs) and all(0 < e <= 1 for e in effs), effs
    least_efficient = rows[0].split("|")[1].strip()
    line = next(ln for ln in out.splitlines() if "Reports:" in ln)
    assert line.split("weeks:", 1)[1].split() == weeks, line
    for week in weeks:
        folder = state / "reports" / week
        assert (folder / "index.html").is_file(), folder
        assert (folder / "grid-summary.pdf").stat().st_size > 10_000, folder
        assert len(list(folder.glob("*.pdf"))) >= n_sites + 1, folder  # summary + one per site
    assert f"http://127.0.0.1:{8080 + offset}" in out
    assert f"http://127.0.0.1:{8088 + offset}/superset/dashboard/grid-operations/" in out
    assert f"jdbc:hive2://127.0.0.1:{10000 + offset}" in out
    for path in re.findall(r"(/\S+secrets/\S+?)(?:[:)\s]|$)", out):
        assert Path(path).is_file(), path
    # The report it offers is the least efficient site's.
    assert f"report --site {least_efficient} --week {weeks[-1]}" in out, out[-2000:]
    if not tries:
        assert "Try:" in out, out[-2000:]
        return
    commands = []
    lines = out.splitlines()
    for i, ln in enumerate(lines):
        if ln.strip().startswith("Try:"):
            commands.append(ln.split("Try:", 1)[1].strip())
            commands += [x.strip() for x in lines[i + 1 :] if x.startswith(" " * 10) and x.strip()]
            break
    assert len(commands) >= 2, out[-2000:]
    for cmd in commands:
        done = subprocess.run(shlex.split(cmd), capture_output=True, text=True, timeout=900,
                              env=env)  # fmt: skip
        assert done.returncode == 0, (cmd, done.stdout[-2000:], done.stderr[-2000:])
        assert done.stdout.strip(), cmd
        if "--format csv" in cmd:
            header, *data = done.stdout.strip().splitlines()
            assert header.startswith("site,") and len(data) == n_sites, done.stdout
