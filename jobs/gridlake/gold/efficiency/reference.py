"""Pure-Python references of the maths (Wilson interval, useful fraction, optimal job length,
Amdahl fit), also used on the driver for the few per-job-type numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from gridlake.gold.efficiency.params import JOB_LENGTH_SEARCH_HOURS, WILSON_Z

# --------------------------------------------------------------------------------------------
# Pure-python references (also used on the driver for the few per-job-type numbers)
# --------------------------------------------------------------------------------------------


def wilson_interval(k: int, n: int, z: float = WILSON_Z) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials."""
    if n <= 0:
        raise ValueError("n must be positive")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def useful_fraction(t_hours: float, init_hours: float, hazard_per_hour: float) -> float:
    """U(T) = T exp(-h(I+T)) / E[wall] with E[wall] = (1 - exp(-h(I+T))) / h.

    Equivalently h T / (exp(h(I+T)) - 1); the limit h -> 0 is T / (I+T).
    """
    if t_hours <= 0:
        return 0.0
    x = hazard_per_hour * (init_hours + t_hours)
    if hazard_per_hour <= 0 or x < 1e-12:
        return t_hours / (init_hours + t_hours)
    return hazard_per_hour * t_hours / math.expm1(x)


def optimal_job_length(
    init_hours: float,
    hazard_per_hour: float,
    lo_hours: float = JOB_LENGTH_SEARCH_HOURS[0],
    hi_hours: float = JOB_LENGTH_SEARCH_HOURS[1],
) -> float:
    """T* maximising ``useful_fraction``: golden-section search on log T in [lo, hi].

    U is unimodal in T (its first-order condition h T = 1 - exp(-h(I+T)) has one root), so the
    search converges to the optimum, or to a bound when the optimum lies outside.
    """

    def u(log_t: float) -> float:
        return useful_fraction(math.exp(log_t), init_hours, hazard_per_hour)

    inv_phi = (math.sqrt(5) - 1) / 2
    a, b = math.log(lo_hours), math.log(hi_hours)
    c, d = b - inv_phi * (b - a), a + inv_phi * (b - a)
    uc, ud = u(c), u(d)
    while b - a > 1e-10:
        if uc >= ud:
            b, d, ud = d, c, uc
            c = b - inv_phi * (b - a)
            uc = u(c)
        else:
            a, c, uc = c, d, ud
            d = a + inv_phi * (b - a)
            ud = u(d)
    return math.exp((a + b) / 2)


class AmdahlPoint(NamedTuple):
    cores: int
    efficiency: float
    weight: float
    variance: float | None = None  # variance of 1/efficiency, for the standard error


class AmdahlFit(NamedTuple):
    serial_fraction: float | None
    serial_fraction_se: float | None
    e1: float | None
    cores_below_90pct: int | None
    n_core_counts: int


def cores_below_90pct(serial_fraction: float | None) -> int | None:
    """Smallest n with 1 / (1 + s (n-1)) < 0.9, i.e. n - 1 > 1 / (9 s)."""
    if serial_fraction is None or serial_fraction <= 0:
        return None
    return math.floor(1 / (9 * serial_fraction)) + 2


def amdahl_fit(points: Sequence[AmdahlPoint | tuple[int, float, float]]) -> AmdahlFit:
    """Weighted least squares of 1/eff = a + b (n-1); s = b/a, e1 = 1/a.

    The standard error of s (when every point has a variance) is the delta method on the
    sandwich covariance of (a, b): (X'WX)^-1 X'W V W X (X'WX)^-1.
    """
    pts = [AmdahlPoint(*p) for p in points]
    n_counts = len({p.cores for p in pts})
    sw = swx = swy = swxx = swxy = m11 = m12 = m22 = 0.0
    for p in pts:
        x, y, w = p.cores - 1.0, 1.0 / p.efficiency, p.weight
        sw, swx, swy = sw + w, swx + w * x, swy + w * y
        swxx, swxy = swxx + w * x * x, swxy + w * x * y
        if p.variance is not None:
            m11, m12, m22 = (
                m11 + w * w * p.variance,
                m12 + w * w * p.variance * x,
                m22 + w * w * p.variance * x * x,
            )
    det = sw * swxx - swx * swx
    if n_counts < 2 or det <= 0:
        return AmdahlFit(None, None, None, None, n_counts)
    b = (sw * swxy - swx * swy) / det
    a = (swy - b * swx) / sw
    s = b / a
    se = None
    if all(p.variance is not None for p in pts):
        # (X'WX)^-1 = [[p, q], [q, r]] / det
        p_, q_, r_ = swxx, -swx, sw
        var_a = (p_ * p_ * m11 + 2 * p_ * q_ * m12 + q_ * q_ * m22) / det**2
        var_b = (q_ * q_ * m11 + 2 * q_ * r_ * m12 + r_ * r_ * m22) / det**2
        cov = (p_ * q_ * m11 + (p_ * r_ + q_ * q_) * m12 + q_ * r_ * m22) / det**2
        var_s = var_b / a**2 + b * b * var_a / a**4 - 2 * b * cov / a**3
        se = math.sqrt(max(var_s, 0.0))
    return AmdahlFit(s, se, 1 / a, cores_below_90pct(s), n_counts)
