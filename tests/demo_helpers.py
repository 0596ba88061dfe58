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


def secret_values(state: Path) -> dict[str, str]:
    """Every secret the instance generated, {where: value}: the values of its secrets folder's
    files (``KEY=value`` and ``key: value`` lines, JSON objects, a bare value such as the Derby
    password's file), URLs left out."""
    found: dict[str, str] = {}
    for path in sorted(p for p in (state / "secrets").rglob("*") if p.is_file()):
        text = path.read_text(errors="replace")
        if path.suffix == ".json":
            pairs = [(k, str(v)) for k, v in json.loads(text).items()]
        else:
            pairs = []
            for line in text.splitlines():
                sep = "=" if "=" in line and ": " not in line else ": "
                if sep in line:
                    key, value = line.split(sep, 1)
                    pairs.append((key.strip(), value.strip()))
            if not pairs and len(text.split()) == 1:  # a file holding the value alone
                pairs.append((path.stem, text.strip()))
        for key, value in pairs:
            if len(value) >= 12 and "://" not in value and key.lower() not in ("user", "url"):
                found[f"{path.relative_to(state / 'secrets')}:{key}"] = value
    return found


def leaks(state: Path, texts: dict[str, str]) -> list[str]:
    """Where a secret of the instance appears: in one of ``texts`` ({name: text}, e.g. the
    command lines of every process, what a command printed) or in a log file of the instance
    (a ``*.log`` file, or any file under a ``logs`` folder)."""
    secrets = secret_values(state)
    assert secrets, f"no secret found in {state / 'secrets'}"
    out = []
    for name, text in texts.items():
        out += [f"{key} in {name}" for key, value in secrets.items() if value in text]
    for path in state.rglob("*"):
        rel = path.relative_to(state)
        if not path.is_file() or rel.parts[0] == "secrets":
            continue
        if path.suffix != ".log" and "logs" not in rel.parts[:-1]:
            continue
        data = path.read_bytes()
        out += [f"{key} in {rel}" for key, value in secrets.items() if value.encode() in data]
    return out


def readable_by_others(state: Path) -> list[str]:
    """The files and folders of the instance that other users may read (mode o+r)."""
    paths = [state, *state.rglob("*")]
    return [str(p) for p in paths if not p.is_symlink() and p.lstat().st_mode & 0o004]
