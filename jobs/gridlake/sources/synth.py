"""Primitives of synthetic telemetry shared by the simulator (``simulate``) and the demo week
(``demo``): timestamps, seeded draws (weighted choice, log-uniform, Poisson), clipping, the
one-way delay between two sites from their coordinates, and the JSON-lines encoding. One copy,
so that the two generators cannot drift apart."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any


def ts(epoch: float) -> str:
    """RFC 3339 UTC timestamp of a whole second."""
    return datetime.fromtimestamp(int(epoch), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch(day: date) -> int:
    """Epoch seconds of a day's midnight UTC."""
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


def pick(rng: random.Random, weighted: Mapping[Any, float] | Sequence[tuple[Any, float]]) -> Any:
    """One key drawn with its weight (a mapping, or (key, weight) pairs)."""
    items = list(weighted.items()) if isinstance(weighted, Mapping) else list(weighted)
    return rng.choices([k for k, _ in items], weights=[w for _, w in items])[0]


def loguniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def clip(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


def poisson(rng: random.Random, lam: float) -> int:
    """A Poisson draw (Knuth below 30, the normal approximation above; 0 for lam <= 0)."""
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    limit, k, p = math.exp(-lam), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def base_delay_ms(lat_a: float, lon_a: float, lat_b: float, lon_b: float) -> float:
    """One-way delay from the great-circle distance: fibre ~200 km/ms, routes ~1.4x longer."""
    la1, lo1, la2, lo2 = map(math.radians, (lat_a, lon_a, lat_b, lon_b))
    h = (
        math.sin((la2 - la1) / 2) ** 2
        + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    )
    return 0.3 + 1.4 * 2 * 6371 * math.asin(math.sqrt(h)) / 200


def dumps(record: dict[str, Any], sort_keys: bool = False) -> str:
    """One JSON line (compact; NaN refused)."""
    return json.dumps(record, sort_keys=sort_keys, separators=(",", ":"), allow_nan=False)
