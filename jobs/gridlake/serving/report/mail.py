"""E-mail each site's weekly PDF to its contacts (ops.sites) through SMTP.

The SMTP server is the connection Airflow would use, in its URI form: ``GRIDLAKE_SMTP_URL``,
else Airflow's ``AIRFLOW_CONN_SMTP_DEFAULT`` (``smtp://user:password@host:587?starttls=true&
from=gridlake%40example.org``; ``smtps://`` for TLS from the start). The password may come
from ``GRIDLAKE_SMTP_PASSWORD`` instead (so it is in no URI). Without a server the run is a dry
run: each message is written as ``<report folder>/mail/<site file>.eml`` and nothing is sent
(the demo's default).

Idempotent: ``<report folder>/mail/sent.json`` records what went to whom (the PDF's sha256);
a rerun sends a site's report again only when its PDF or its contacts changed, or with
``resend``. The log is written after each message, so a crash mid-run re-sends at most the
message it was sending.
"""

from __future__ import annotations

import hashlib
import json
import os
import smtplib
import ssl
from dataclasses import dataclass
from datetime import UTC, date, datetime
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from gridlake.serving.report.model import site_file_stem, week_label

DEFAULT_SENDER = "gridlake@localhost"


@dataclass(frozen=True)
class Smtp:
    host: str
    port: int
    user: str | None = None
    password: str | None = None
    sender: str = DEFAULT_SENDER
    starttls: bool = False
    tls: bool = False  # smtps: TLS from the first byte

    def __repr__(self) -> str:  # never the password in a log line
        return f"Smtp({self.host}:{self.port}, user={self.user}, tls={self.tls or self.starttls})"


def smtp_from_env(env: dict[str, str] | None = None) -> Smtp | None:
    """The SMTP server of GRIDLAKE_SMTP_URL or AIRFLOW_CONN_SMTP_DEFAULT; None: a dry run."""
    env = dict(os.environ) if env is None else env
    url = env.get("GRIDLAKE_SMTP_URL") or env.get("AIRFLOW_CONN_SMTP_DEFAULT")
    if not url:
        return None
    u = urlsplit(url)
    if u.scheme not in ("smtp", "smtps") or not u.hostname:
        raise ValueError("the SMTP URL must be smtp://[user[:password]@]host[:port] or smtps://")
    query = {k: v[-1] for k, v in parse_qs(u.query).items()}
    tls = u.scheme == "smtps"
    return Smtp(
        host=u.hostname,
        port=u.port or (465 if tls else 25),
        user=unquote(u.username) if u.username else None,
        password=unquote(u.password) if u.password else env.get("GRIDLAKE_SMTP_PASSWORD"),
        sender=query.get("from", DEFAULT_SENDER),
        starttls=query.get("starttls", "false").lower() in ("1", "true", "yes"),
        tls=tls,
    )


def compose(site: str, week: date, pdf: Path, contacts: list[str], sender: str) -> EmailMessage:
    """The message: to the site's contacts, the week in the subject, the PDF attached."""
    label = week_label(week)
    msg = EmailMessage()
    msg["Subject"] = f"gridlake weekly report {label}: {site}"
    msg["From"] = sender
    msg["To"] = ", ".join(contacts)
    msg["Message-ID"] = make_msgid(domain=sender.rsplit("@", 1)[-1])
    msg.set_content(
        f"The weekly efficiency report of {site} for {label} (Monday {week.isoformat()}) is "
        "attached as a PDF: efficiency and CPU time by VO and job type, failures and what they "
        "cost, I/O limits and the site's network links, against the grid.\n\n"
        "You receive it as a contact of the site in gridlake's site reference (ops.sites); ask "
        "the grid operations team to change the contacts.\n"
    )
    msg.add_attachment(pdf.read_bytes(), maintype="application", subtype="pdf",
                       filename=pdf.name)  # fmt: skip
    return msg


def _deliver(smtp: Smtp, msg: EmailMessage) -> None:
    context = ssl.create_default_context()
    cls = smtplib.SMTP_SSL if smtp.tls else smtplib.SMTP
    kwargs = {"context": context} if smtp.tls else {}
    with cls(smtp.host, smtp.port, timeout=60, **kwargs) as server:
        if smtp.starttls:
            server.starttls(context=context)
        if smtp.user:
            server.login(smtp.user, smtp.password or "")
        server.send_message(msg)


def send_reports(
    week: date,
    folder: Path,
    contacts: dict[str, list[str]],
    smtp: Smtp | None,
    resend: bool = False,
) -> list[dict]:
    """E-mail the PDFs of ``folder`` (the week's reports) to each site's contacts.

    One result per site with a PDF in the folder or contacts: ``status`` sent | dry_run |
    already_sent | no_contacts | no_report, with the recipients. ``smtp`` None: a dry run."""
    mail_dir = folder / "mail"
    mail_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_path = mail_dir / "sent.json"
    sent = json.loads(log_path.read_text()) if log_path.is_file() else {}
    pdf_sites = {p.stem: p for p in folder.glob("site-*.pdf")}
    results = []
    for site in sorted(set(contacts) | {s for s in _sites_of(pdf_sites, contacts)}):
        to = contacts.get(site) or []
        pdf = pdf_sites.get(site_file_stem(site))
        if pdf is None:
            results.append({"site": site, "status": "no_report", "to": to})
            continue
        if not to:
            results.append({"site": site, "status": "no_contacts", "to": []})
            continue
        digest = hashlib.sha256(pdf.read_bytes()).hexdigest()
        last = sent.get(site)
        if not resend and last and last["sha256"] == digest and last["to"] == to:
            results.append({"site": site, "status": "already_sent", "to": to})
            continue
        msg = compose(site, week, pdf, to, smtp.sender if smtp else DEFAULT_SENDER)
        if smtp is None:
            (mail_dir / f"{pdf.stem}.eml").write_bytes(bytes(msg))
            results.append({"site": site, "status": "dry_run", "to": to})
            continue
        _deliver(smtp, msg)
        sent[site] = {"sha256": digest, "to": to, "message_id": msg["Message-ID"],
                      "sent_at": datetime.now(UTC).isoformat(timespec="seconds")}  # fmt: skip
        tmp = log_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(sent, indent=1, sort_keys=True))
        tmp.replace(log_path)
        results.append({"site": site, "status": "sent", "to": to})
    return results


def _sites_of(pdf_sites: dict[str, Path], contacts: dict[str, list[str]]) -> list[str]:
    """Site names of the PDFs (the file stem is site-<name> with unsafe characters as _): the
    contact list's name when it maps to the stem, else the stem's own text."""
    by_stem = {site_file_stem(s): s for s in contacts}
    return [by_stem.get(stem, stem[len("site-") :]) for stem in pdf_sites]
