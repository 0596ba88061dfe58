"""Driving Airflow from the tests: infra/airflow.sh in a subprocess (Airflow lives in its own
venv; the tests never import it), and reading what a run did."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from gridlake.settings import get_settings

AIRFLOW_SH = Path(__file__).resolve().parent.parent / "infra" / "airflow.sh"
# The DAGs' tasks run the main venv's gridlake CLI (not a test's stand-in) and retry after 5 s.
REAL_CLI = {"GRIDLAKE_CLI": "", "GRIDLAKE_RETRY_DELAY_SECONDS": "5"}


def airflow_sh(*args: str, env: dict[str, str] | None = None, timeout: float = 600):
    """Run infra/airflow.sh with stdout and stderr merged (Airflow logs to both)."""
    return subprocess.run(
        ["bash", str(AIRFLOW_SH), *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )


def finished_run(output: str) -> tuple[str, str]:
    """(run_id, state) from the "DagRun Finished" line `airflow dags test` logs."""
    match = re.search(r"DagRun Finished: .*?run_id=([^,\s]+),.*? state=([a-z_]+)", output)
    assert match, f"no 'DagRun Finished' line in:\n{output[-4000:]}"
    return match.group(1), match.group(2)


def task_states(dag_id: str, run_id: str) -> dict[str, str]:
    result = airflow_sh("run", "tasks", "states-for-dag-run", dag_id, run_id, "-o", "json")
    assert result.returncode == 0, result.stdout[-4000:]
    # Airflow's own log lines (warnings) share stdout with the JSON: take the JSON line.
    line = next(x for x in reversed(result.stdout.splitlines()) if x.startswith("[{"))
    return {row["task_id"]: row["state"] for row in json.loads(line)}


def dags_test(
    dag_id: str, day: str, timeout: float = 3600, conf: dict | None = None
) -> tuple[str, str]:
    """`airflow dags test` of a DAG with the real CLI (``conf``: the run's params): (run_id,
    output); fails unless success."""
    extra = (json.dumps(conf),) if conf else ()
    result = airflow_sh("dags-test", dag_id, day, *extra, env=REAL_CLI, timeout=timeout)
    run_id, state = finished_run(result.stdout)
    assert result.returncode == 0 and state == "success", result.stdout[-6000:]
    return run_id, result.stdout


class AirflowAPI:
    """An instance's Airflow API server (REST v2), logged in as its generated admin: a call takes
    milliseconds, where each Airflow CLI call takes ~6 s of CPU to start (the demo test's runs and
    triggers used to be ten of those)."""

    def __init__(self, base: str, state: Path) -> None:
        self.base = base
        login = json.loads((state / "secrets" / "airflow_passwords.json").read_text())
        answer = self._call(
            "POST", "/auth/token", {"username": "admin", "password": login["admin"]}
        )
        self.token = answer["access_token"]

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        import urllib.request

        headers = {"Content-Type": "application/json"}
        if getattr(self, "token", None):
            headers["Authorization"] = f"Bearer {self.token}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read())

    def runs(self, dag_id: str) -> list[dict]:
        """The DAG's runs (dag_run_id, state, run_after, ...), up to 100."""
        return self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns?limit=100")["dag_runs"]

    def trigger(self, dag_id: str) -> str:
        """A manual run of the DAG now; its run_id."""
        return self._call("POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": None})[
            "dag_run_id"
        ]


# --- what a run wrote, and who listens --------------------------------------------------------


def pdf_pages(pdf: Path, out: Path) -> list[tuple[str, object]]:
    from PIL import Image

    subprocess.run(["pdftoppm", "-r", "60", "-png", str(pdf), str(out / "page")], check=True)
    pngs = sorted(out.glob("page-*.png"), key=lambda p: int(re.findall(r"\d+", p.stem)[-1]))
    pages = []
    for n, png in enumerate(pngs, 1):
        text = subprocess.run(
            ["pdftotext", "-layout", "-f", str(n), "-l", str(n), str(pdf), "-"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        pages.append((" ".join(text.split()), Image.open(png).convert("RGB")))
    return pages


def colored_pixels(img, box) -> int:
    """Pixels of the box that are clearly coloured (plot marks; text and axes are grey)."""
    crop = img.crop(box)
    return sum(
        1
        for r, g, b in getattr(crop, "get_flattened_data", crop.getdata)()
        if max(r, g, b) - min(r, g, b) > 60
    )


def listeners(pids: set[int]) -> list[tuple[str, set[int]]]:
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        owners = {int(x) for x in re.findall(r"pid=(\d+)", line)}
        if owners & pids:
            found.append((line.split()[3], owners))
    return found


def airflow_pids() -> set[int]:
    run_dir = get_settings().state / "run"
    roots = {int(p.read_text()) for p in run_dir.glob("airflow-*.pid")}

    def tree(pid: int) -> set[int]:
        kids = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                              text=True).stdout.split()  # fmt: skip
        return {pid}.union(*(tree(int(k)) for k in kids))

    return set().union(*(tree(p) for p in roots)) if roots else set()


def assert_report_pages(folder: Path, site: str, out: Path) -> None:
    """A site's weekly PDF, rendered to PNG (kept under the instance's screenshots): each section
    on its page, with its title and its sentence, and coloured plot marks in both panels of its
    figure; the HTML's plots each have points."""
    from gridlake.serving.report import SITE_SECTIONS, site_file_stem

    html = (folder / f"{site_file_stem(site)}.html").read_text()
    points = [int(p) for p in re.findall(r'data-points="(\d+)"', html)]
    assert len(points) == len(SITE_SECTIONS) and min(points) > 0, points
    pages = pdf_pages(folder / f"{site_file_stem(site)}.pdf", out)
    shutil.copytree(out, get_settings().state / "screenshots" / "report-pages", dirs_exist_ok=True)
    sentences = re.findall(r'<p class="changed">(.*?)</p>', html)
    for i, (key, title) in enumerate(SITE_SECTIONS, 1):
        words = " ".join(re.sub(r"&#x27;|&amp;", "'", sentences[i - 1]).split()[:6])
        # the heading followed by its sentence (page 1's table of contents lists the headings)
        hits = [n for n, (text, _img) in enumerate(pages) if f"{i}. {title} {words}" in text]
        assert len(hits) == 1, f"section {i}. {title} with '{words}' on pages {hits}"
        _text, img = pages[hits[0]]
        w, h = img.size
        left, right = (0, 0, w // 2, h), (w // 2, 0, w, h)
        # one marker at 60 dpi is ~30 coloured pixels (a site with a single CPU model has one
        # point in the speed panel); axes, grid lines and text are grey
        assert colored_pixels(img, left) > 20 and colored_pixels(img, right) > 20, (key, site)
