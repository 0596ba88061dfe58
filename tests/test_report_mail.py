"""Weekly reports by e-mail: ops.sites' contacts, a real SMTP server on loopback (aiosmtpd), the
messages and their PDF attachments as received, the dry run, and reruns that send nothing new.
"""

from __future__ import annotations

import email
import json
import socket
from datetime import date
from email.message import EmailMessage
from email.policy import default as default_policy

import pytest
from aiosmtpd.controller import Controller

from gridlake.serving.report.mail import Smtp, send_reports, smtp_from_env

WEEK = date(2026, 11, 16)  # 2026-W47


class Inbox:
    """aiosmtpd handler: keeps every message it receives, parsed, with its envelope."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], EmailMessage]] = []

    async def handle_DATA(self, server, session, envelope):
        msg = email.message_from_bytes(envelope.content, policy=default_policy)
        self.messages.append((list(envelope.rcpt_tos), msg))
        return "250 OK"


@pytest.fixture
def smtp_server():
    with socket.socket() as s:  # a free port on loopback
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield Smtp("127.0.0.1", port, sender="reports@gridlake.example.org"), inbox
    controller.stop()


def _pdf(text: str) -> bytes:
    return b"%PDF-1.4\n% " + text.encode() + b"\n%%EOF\n"


def _attachment(msg: EmailMessage) -> tuple[str, bytes]:
    (part,) = list(msg.iter_attachments())
    return part.get_filename(), part.get_content()


def test_smtp_url_parsing_and_the_dry_run_default() -> None:
    assert smtp_from_env({}) is None
    s = smtp_from_env(
        {"AIRFLOW_CONN_SMTP_DEFAULT": "smtp://ops%40grid:p%2Fw@mail.example.org:587"
                                      "?starttls=true&from=gridlake%40example.org"}
    )  # fmt: skip
    assert (s.host, s.port, s.user, s.password) == ("mail.example.org", 587, "ops@grid", "p/w")
    assert s.starttls and not s.tls and s.sender == "gridlake@example.org"
    assert "p/w" not in repr(s)
    # gridlake's own URL wins; the password may come on its own; smtps defaults to 465
    s = smtp_from_env({"GRIDLAKE_SMTP_URL": "smtps://bot@relay", "GRIDLAKE_SMTP_PASSWORD": "x",
                       "AIRFLOW_CONN_SMTP_DEFAULT": "smtp://other"})  # fmt: skip
    assert (s.host, s.port, s.user, s.password, s.tls) == ("relay", 465, "bot", "x", True)
    with pytest.raises(ValueError, match="smtp://"):
        smtp_from_env({"GRIDLAKE_SMTP_URL": "http://relay"})


def test_reports_reach_each_sites_contacts_once(smtp_server, tmp_path) -> None:
    smtp, inbox = smtp_server
    (tmp_path / "site-CERN-PROD.pdf").write_bytes(_pdf("cern"))
    (tmp_path / "site-BNL-ATLAS.pdf").write_bytes(_pdf("bnl"))
    (tmp_path / "site-FZK-LCG2.pdf").write_bytes(_pdf("fzk"))  # no contacts
    (tmp_path / "summary.pdf").write_bytes(_pdf("grid"))  # not a site's
    contacts = {
        "CERN-PROD": ["ops@cern.example", "t1@cern.example"],
        "BNL-ATLAS": ["ops@bnl.example"],
        "PIC": ["ops@pic.example"],  # no report this week
    }
    results = {r["site"]: r["status"] for r in send_reports(WEEK, tmp_path, contacts, smtp)}
    assert results == {"CERN-PROD": "sent", "BNL-ATLAS": "sent", "FZK-LCG2": "no_contacts",
                       "PIC": "no_report"}  # fmt: skip
    got = {msg["Subject"]: (rcpt, msg) for rcpt, msg in inbox.messages}
    assert sorted(got) == [
        "gridlake weekly report 2026-W47: BNL-ATLAS",
        "gridlake weekly report 2026-W47: CERN-PROD",
    ]
    rcpt, msg = got["gridlake weekly report 2026-W47: CERN-PROD"]
    assert rcpt == contacts["CERN-PROD"]
    assert msg["From"] == "reports@gridlake.example.org"
    assert msg["To"] == "ops@cern.example, t1@cern.example"
    assert _attachment(msg) == ("site-CERN-PROD.pdf", _pdf("cern"))
    assert "2026-W47" in msg.get_body(preferencelist=("plain",)).get_content()
    log = json.loads((tmp_path / "mail" / "sent.json").read_text())
    assert sorted(log) == ["BNL-ATLAS", "CERN-PROD"]

    # A rerun sends nothing; a rewritten PDF or new contacts send that site's again.
    again = send_reports(WEEK, tmp_path, contacts, smtp)
    assert {r["site"]: r["status"] for r in again}["CERN-PROD"] == "already_sent"
    assert len(inbox.messages) == 2
    (tmp_path / "site-BNL-ATLAS.pdf").write_bytes(_pdf("bnl, rebuilt"))
    contacts["CERN-PROD"] = ["new@cern.example"]
    third = {r["site"]: r["status"] for r in send_reports(WEEK, tmp_path, contacts, smtp)}
    assert (third["CERN-PROD"], third["BNL-ATLAS"]) == ("sent", "sent")
    assert len(inbox.messages) == 4
    assert _attachment(inbox.messages[-1][1])[1] in (_pdf("bnl, rebuilt"), _pdf("cern"))
    # --resend sends everything with contacts again
    resent = send_reports(WEEK, tmp_path, contacts, smtp, resend=True)
    assert sum(r["status"] == "sent" for r in resent) == 2 and len(inbox.messages) == 6


def test_dry_run_writes_the_messages_and_sends_nothing(smtp_server, tmp_path) -> None:
    _, inbox = smtp_server
    (tmp_path / "site-CERN-PROD.pdf").write_bytes(_pdf("cern"))
    results = send_reports(WEEK, tmp_path, {"CERN-PROD": ["ops@cern.example"]}, None)
    assert [(r["site"], r["status"]) for r in results] == [("CERN-PROD", "dry_run")]
    assert inbox.messages == []
    msg = email.message_from_bytes(
        (tmp_path / "mail" / "site-CERN-PROD.eml").read_bytes(), policy=default_policy
    )
    assert msg["To"] == "ops@cern.example"
    assert _attachment(msg) == ("site-CERN-PROD.pdf", _pdf("cern"))
    assert not (tmp_path / "mail" / "sent.json").exists()  # a dry run is not a delivery


def test_cli_sends_the_weeks_reports_to_the_contacts_in_ops_sites(
    spark, smtp_server, monkeypatch
) -> None:
    """`gridlake sites set` then `gridlake report --send`, in this process (the test session's
    Spark), through the SMTP server of GRIDLAKE_SMTP_URL."""
    from gridlake.contacts import OPS_SITES, read_sites, report_contacts
    from gridlake.ops.cli import main
    from gridlake.serving.report import report_dir
    from gridlake.settings import get_settings

    smtp, inbox = smtp_server
    monkeypatch.setenv("GRIDLAKE_SERVER", "off")
    folder = report_dir(WEEK)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("site-*.pdf"):
        old.unlink()
    (folder / "mail" / "sent.json").unlink(missing_ok=True)
    (folder / "site-MAIL-TEST-A.pdf").write_bytes(_pdf("a"))
    (folder / "site-MAIL-TEST-B.pdf").write_bytes(_pdf("b"))
    assert main(["sites", "set", "MAIL-TEST-A", "--contacts", "a@site-a.example"]) == 0
    assert main(["sites", "set", "MAIL-TEST-B", "--contacts", "b@site-b.example",
                 "--no-reports"]) == 0  # fmt: skip
    assert main(["sites", "set", "MAIL-TEST-C", "--contacts", "not an address"]) == 2
    # set again: the row is replaced (MERGE on site), not duplicated
    assert (
        main(["sites", "set", "MAIL-TEST-A", "--contacts", "a@site-a.example,b@site-a.example"])
        == 0
    )
    rows = [r for r in read_sites(spark) if r["site"].startswith("MAIL-TEST")]
    assert [(r["site"], r["contacts"], r["send_reports"]) for r in rows] == [
        ("MAIL-TEST-A", ["a@site-a.example", "b@site-a.example"], True),
        ("MAIL-TEST-B", ["b@site-b.example"], False),
    ]
    contacts = report_contacts(spark)
    assert contacts["MAIL-TEST-A"] == ["a@site-a.example", "b@site-a.example"]
    assert "MAIL-TEST-B" not in contacts
    monkeypatch.setenv("GRIDLAKE_SMTP_URL", f"smtp://127.0.0.1:{smtp.port}")
    assert main(["report", "--week", "2026-W47", "--send"]) == 0
    assert [(rcpt, m["Subject"]) for rcpt, m in inbox.messages] == [
        (["a@site-a.example", "b@site-a.example"], "gridlake weekly report 2026-W47: MAIL-TEST-A")
    ]
    assert main(["report", "--week", "2026-W47", "--send"]) == 0  # nothing new
    assert len(inbox.messages) == 1
    spark.sql(f"DELETE FROM delta.`{OPS_SITES.path(get_settings())}` WHERE site LIKE 'MAIL-TEST%'")
