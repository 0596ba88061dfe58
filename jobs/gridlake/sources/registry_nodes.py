"""Real-format readers for node samples (``grid.nodes``) and perfSONAR results (``grid.network``).

``FORMATS[name] = (topic, reader)``; every reader is
``reader(path, *, site=None, host=None, **opts) -> Iterator[dict | Rejected]`` (see each module's
docstring for its options: ``start=``, ``interval_seconds=``, ``tz=``, ``keep_first=``,
``metadata=``, ``uri=``, ``event_type=``, ``src_site=``, ``dst_site=``...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gridlake.sources.base import Item
from gridlake.sources.iostat import read_iostat, read_iostat_json
from gridlake.sources.perfsonar import read_esmond, read_osg_netds, read_ps5
from gridlake.sources.sadf import read_sadf
from gridlake.sources.vmstat import read_vmstat

Reader = Callable[..., Iterator[Item]]

FORMATS: dict[str, tuple[str, Reader]] = {
    "vmstat": ("grid.nodes", read_vmstat),
    "iostat": ("grid.nodes", read_iostat),
    "iostat-json": ("grid.nodes", read_iostat_json),
    "sadf-json": ("grid.nodes", read_sadf),
    "esmond": ("grid.network", read_esmond),
    "ps5": ("grid.network", read_ps5),
    "osg-netds": ("grid.network", read_osg_netds),
}


def read(fmt: str, path: Path, **opts: Any) -> tuple[str, Iterator[Item]]:
    """(topic, items) of one file in format ``fmt``; KeyError lists the known formats."""
    try:
        topic, reader = FORMATS[fmt]
    except KeyError:
        raise KeyError(f"unknown format {fmt!r}; known: {', '.join(sorted(FORMATS))}") from None
    return topic, reader(Path(path), **opts)
