"""Format name -> (Kafka topic, reader) for every real-format adapter.

Each reader is ``reader(path, *, site=None, host=None, vo=None) -> Iterator[dict | Rejected]``
(``gridlake.sources.base``); job readers also take ``fill_unknown=``, the Slurm reader
``fields=`` and ``tz=``, the PBS, SGE and LSF readers ``blah=`` (CREAM BLAH files that give
batch jobs their VO; ``gridlake.sources.cream``).
"""

from __future__ import annotations

from gridlake.sources.apel import read_apel_jobs, read_apel_summaries
from gridlake.sources.base import Reader
from gridlake.sources.cream import read_blah
from gridlake.sources.htcondor import (
    read_apel_condor_lines,
    read_condor_history,
    read_condor_history_json,
)
from gridlake.sources.lsf import read_lsf
from gridlake.sources.pbs import read_pbs
from gridlake.sources.sge import read_sge
from gridlake.sources.slurm import read_sacct
from gridlake.sources.supremm import read_supremm
from gridlake.sources.swf import read_swf

JOBS_TOPIC = "grid.jobs"
SUMMARIES_TOPIC = "grid.accounting_summaries"

FORMATS: dict[str, tuple[str, Reader]] = {
    "htcondor": (JOBS_TOPIC, read_condor_history),  # condor_history -l
    "htcondor-json": (JOBS_TOPIC, read_condor_history_json),  # condor_history -json / -jsonl
    "htcondor-apel": (JOBS_TOPIC, read_apel_condor_lines),  # APEL htcondor_acc.sh '|' lines
    "slurm": (JOBS_TOPIC, read_sacct),  # sacct -P, with or without header
    "swf": (JOBS_TOPIC, read_swf),  # Standard Workload Format traces
    "pbs": (JOBS_TOPIC, read_pbs),  # PBS/Torque accounting log 'E' records
    "sge": (JOBS_TOPIC, read_sge),  # Grid Engine accounting file
    "lsf": (JOBS_TOPIC, read_lsf),  # LSF lsb.acct JOB_FINISH records
    "cream-blah": (JOBS_TOPIC, read_blah),  # CREAM BLAH log: only rejections (no CPU/wall)
    "supremm": (JOBS_TOPIC, read_supremm),  # SUPReMM/XDMoD job summaries (PCP)
    "apel-job": (JOBS_TOPIC, read_apel_jobs),  # APEL-individual-job-message v0.2-v0.4
    "apel-summary": (SUMMARIES_TOPIC, read_apel_summaries),  # APEL-summary-job-message
}

# Node and perfSONAR formats (grid.nodes, grid.network) live in registry_nodes.
from gridlake.sources.registry_nodes import FORMATS as _NODE_NETWORK_FORMATS  # noqa: E402

assert not set(FORMATS) & set(_NODE_NETWORK_FORMATS), "format names must be unique"
FORMATS.update(_NODE_NETWORK_FORMATS)


def reader_for(name: str) -> tuple[str, Reader]:
    """(topic, reader) of a format name; ValueError naming the known formats otherwise."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}; one of {sorted(FORMATS)}") from None
