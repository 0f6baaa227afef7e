"""What the roofline knows of each GPU architecture, and the peaks of one device.

The facts live in analysis/arch/<arch>.toml (package data): peak rates per CU (or channel) per
clock, the counter formulas for FLOPs and bytes, occupancy limits and a default device for figures a
profile does not carry; each figure names its source there. This module loads them, picks the
device figures (the profile's agent info first, the architecture's default device for the rest) and
turns rates into peaks, preferring peaks the user gave (`--peaks`), then peaks measured on the
device (rocprof-compute's roofline.csv), then the theoretical ones.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
try:
    import tomllib  # novermin: Python 3.11+; tomli below is the same parser for 3.10
except ModuleNotFoundError:
    import tomli as tomllib

from rocm_perf.analysis.counter_formula import Formula, parse_formula
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.model import Agent

ARCH_DIR = Path(__file__).with_name("arch")
MEMORY_LEVELS = ("hbm", "l2", "vl1d", "lds")
_PER = {
    "cu_clock": "per CU per clock",
    "l2_channel_clock": "per L2 channel per clock",
    "hbm_channel_mclk": "per HBM channel per memory clock",
    "lds_bank_clock": "per LDS bank per CU per clock",
}


@dataclass(frozen=True)
class PeakRate:
    key: str
    per: str  # one of _PER
    value: float
    source: str


@dataclass(frozen=True)
class OccupancyLimits:
    wave_size: int
    simd_per_cu: int
    waves_per_simd: int
    vgprs_per_lane: int  # arch VGPRs + AGPRs share this file on CDNA2 and later
    vgpr_granule: int
    lds_bytes_per_cu: int
    lds_granule: int
    source: str


@dataclass(frozen=True)
class ArchSpec:
    arch: str
    family: str
    products: str
    aliases: tuple[str, ...]
    occupancy: OccupancyLimits
    default_device: dict
    peaks: dict[str, PeakRate]
    flops: dict[str, Formula]
    bytes: dict[str, Formula]
    other: dict[str, Formula]

    def formulas(self) -> list[Formula]:
        return [*self.flops.values(), *self.bytes.values(), *self.other.values()]

    def roofline_counters(self) -> list[str]:
        """Every counter the roofline and its findings read, in formula order, once each."""
        return list(dict.fromkeys(c for f in self.formulas() for c in f.counters))

    def required_counters(self) -> list[str]:
        """The counters without which a part of the roofline is missing (optional ones left out)."""
        return list(dict.fromkeys(c for f in self.formulas() if not f.optional for c in f.counters))


@functools.cache
def known_archs() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in ARCH_DIR.glob("*.toml")))


def _formulas(table: dict, where: str) -> dict[str, Formula]:
    out = {}
    for key, body in table.items():
        formula = Formula(key=key, expr=body["expr"], source=body["source"], peak=body.get("peak"),
                          optional=bool(body.get("optional", False)), integer=bool(body.get("integer", False)))
        parse_formula(formula.expr, f"{where}.{key}")  # a bad data file fails loudly, at load
        out[key] = formula
    return out


@functools.cache
def _load(arch: str) -> ArchSpec:
    path = ARCH_DIR / f"{arch}.toml"
    data = tomllib.loads(path.read_text())
    occupancy = OccupancyLimits(**data["occupancy"])
    peaks = {k: PeakRate(k, v["per"], float(v["value"]), v["source"]) for k, v in data["peak"].items()}
    for key, rate in peaks.items():
        if rate.per not in _PER:
            raise RocmPerfError(f"{path}: peak {key}: unknown `per` {rate.per!r}")
    spec = ArchSpec(
        arch=data["arch"], family=data["family"], products=data["products"], aliases=tuple(data.get("aliases", ())),
        occupancy=occupancy, default_device=dict(data["default_device"]), peaks=peaks,
        flops=_formulas(data.get("flops", {}), f"{arch}.flops"), bytes=_formulas(data.get("bytes", {}), f"{arch}.bytes"),
        other=_formulas(data.get("other", {}), f"{arch}.other"),
    )
    for f in [*spec.flops.values(), *spec.bytes.values()]:
        if f.peak not in peaks:
            raise RocmPerfError(f"{path}: formula {f.key} is measured against peak {f.peak!r}, which is not defined")
    return spec


def base_arch(name: str) -> str:
    """`gfx942:sramecc+:xnack-` -> `gfx942`."""
    return (name or "").split(":", 1)[0].strip().lower()


def arch_spec(name: str, shown: str = "") -> ArchSpec:
    """The facts for a GPU architecture (aliases resolved); RocmPerfError naming it when unknown."""
    arch = base_arch(name)
    for known in known_archs():
        spec = _load(known)
        if arch == spec.arch or arch in spec.aliases:
            return spec
    where = f"{shown}: " if shown else ""
    if not arch:
        raise RocmPerfError(f"{where}the profile does not say which GPU architecture it ran on; pass --arch "
                            f"({', '.join(known_archs())})")
    raise RocmPerfError(f"{where}GPU architecture {arch} has no roofline data (known: {', '.join(known_archs())})")


# ---- one device ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Device:
    """The figures of one GPU that peaks are computed from; `origin` says where each came from."""

    arch: str
    product: str
    cu_count: int
    sclk_mhz: float
    mclk_mhz: float | None
    hbm_channels: int | None
    l2_channels: int
    lds_banks_per_cu: int
    hbm_gbs: float | None
    wave_size: int
    origin: dict[str, str] = field(default_factory=dict)

    def params(self) -> dict[str, float]:
        """Device figures the counter formulas may name."""
        return {"wave_size": self.wave_size, "lds_banks_per_cu": self.lds_banks_per_cu, "cu_count": self.cu_count}

    def to_json(self) -> dict:
        return {
            "arch": self.arch, "product": self.product, "cu_count": self.cu_count, "sclk_mhz": self.sclk_mhz,
            "mclk_mhz": self.mclk_mhz, "hbm_channels": self.hbm_channels, "l2_channels": self.l2_channels,
            "lds_banks_per_cu": self.lds_banks_per_cu, "hbm_gbs": self.hbm_gbs, "wave_size": self.wave_size,
            "origin": dict(self.origin),
        }


def _positive(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number > 0 else None


def device_of(agent: Agent | None, spec: ArchSpec) -> Device:
    """The device's figures: the agent's own where it says, the architecture's default device for the rest."""
    default = spec.default_device
    default_name = f"{spec.arch} default ({default.get('product', '?')})"
    extra = agent.extra if agent else {}
    origin: dict[str, str] = {}

    def pick(key: str, agent_value, default_key: str):
        value = _positive(agent_value)
        if value is not None:
            origin[key] = "profile"
            return value
        value = _positive(default.get(default_key))
        if value is not None:
            origin[key] = default_name
        return value

    cu = pick("cu_count", agent.cu_count if agent else None, "cu_count")
    sclk = pick("sclk_mhz", extra.get("max_engine_clk_fcompute"), "sclk_mhz")
    mclk = pick("mclk_mhz", extra.get("max_mem_clk_mhz"), "mclk_mhz")
    hbm_channels = pick("hbm_channels", extra.get("hbm_channels"), "hbm_channels")
    l2_channels = pick("l2_channels", extra.get("l2_channels"), "l2_channels")
    banks = pick("lds_banks_per_cu", extra.get("lds_banks_per_cu"), "lds_banks_per_cu")
    hbm_gbs = pick("hbm_gbs", extra.get("hbm_bandwidth_gbs"), "hbm_gbs")
    wave = _positive(extra.get("wave_front_size")) or spec.occupancy.wave_size
    product = (agent.product if agent and agent.product else "") or default.get("product", "")
    if cu is None or sclk is None or l2_channels is None or banks is None:
        raise RocmPerfError(f"{spec.arch}: the device's CU count and clock are unknown and the architecture has no default")
    return Device(
        arch=spec.arch, product=product, cu_count=int(cu), sclk_mhz=sclk, mclk_mhz=mclk,
        hbm_channels=int(hbm_channels) if hbm_channels else None, l2_channels=int(l2_channels),
        lds_banks_per_cu=int(banks), hbm_gbs=hbm_gbs, wave_size=int(wave), origin=origin,
    )


# ---- peaks ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Peak:
    value: float  # bytes/s, FLOP/s or OP/s
    source: str

    def to_json(self) -> dict:
        return {"value": self.value, "source": self.source}


def _fmt(number: float) -> str:
    return f"{number:g}"


def theoretical_peak(spec: ArchSpec, device: Device, key: str) -> Peak | None:
    rate = spec.peaks[key]
    head = f"theoretical ({spec.arch}): {_fmt(rate.value)} {'B' if key in MEMORY_LEVELS else 'ops'} {_PER[rate.per]}"
    hz = device.sclk_mhz * 1e6
    if rate.per == "cu_clock":
        return Peak(rate.value * device.cu_count * hz, f"{head} x {device.cu_count} CUs x {_fmt(device.sclk_mhz)} MHz")
    if rate.per == "l2_channel_clock":
        return Peak(rate.value * device.l2_channels * hz,
                    f"{head} x {device.l2_channels} channels x {_fmt(device.sclk_mhz)} MHz")
    if rate.per == "lds_bank_clock":
        return Peak(rate.value * device.lds_banks_per_cu * device.cu_count * hz,
                    f"{head} x {device.lds_banks_per_cu} banks x {device.cu_count} CUs x {_fmt(device.sclk_mhz)} MHz")
    if device.mclk_mhz and device.hbm_channels:
        return Peak(rate.value * device.hbm_channels * device.mclk_mhz * 1e6,
                    f"{head} x {device.hbm_channels} channels x {_fmt(device.mclk_mhz)} MHz")
    if device.hbm_gbs:
        return Peak(device.hbm_gbs * 1e9, f"theoretical ({spec.arch}): {_fmt(device.hbm_gbs)} GB/s")
    return None


def resolve_peaks(spec: ArchSpec, device: Device, measured: dict[str, float] | None = None,
                  measured_from: str = "", user: dict[str, float] | None = None, user_from: str = "") -> dict[str, Peak]:
    """Every peak of the architecture: the user's (--peaks) first, then measured, then theoretical."""
    out: dict[str, Peak] = {}
    for key in spec.peaks:
        if user and key in user:
            out[key] = Peak(user[key], f"given: {user_from}")
        elif measured and key in measured:
            out[key] = Peak(measured[key], f"measured: {measured_from or 'the device'}")
        else:
            peak = theoretical_peak(spec, device, key)
            if peak is not None:
                out[key] = peak
    return out


# ---- --peaks FILE ---------------------------------------------------------------------------------

# A peaks file names each value's unit in its key: `hbm_gbs`, `valu_f32_tflops`, `mfma_i8_tiops`.
_UNIT_SUFFIX = {"_gbs": 1e9, "_tbs": 1e12, "_gflops": 1e9, "_tflops": 1e12, "_giops": 1e9, "_tiops": 1e12}


def peak_keys() -> list[str]:
    """Every peak some architecture defines (hbm, l2, ..., valu_f32, mfma_f16, ...)."""
    return sorted({k for a in known_archs() for k in _load(a).peaks})


def parse_peaks(data: object, shown: str) -> dict[str, float]:
    """Peaks from a peaks file's object ({"hbm_gbs": 5300, "mfma_f16_tflops": 1300}) in bytes/s and FLOP/s."""
    if not isinstance(data, dict):
        raise RocmPerfError(f'{shown}: expected an object of peaks, like {{"hbm_gbs": 5300, "valu_f32_tflops": 80}}')
    known = peak_keys()
    peaks = {}
    for name, value in data.items():
        suffix = next((s for s in _UNIT_SUFFIX if str(name).endswith(s)), None)
        key = str(name)[: -len(suffix)] if suffix else None
        if key not in known:
            raise RocmPerfError(f"{shown}: unknown peak {name!r} (a peak name with its unit: "
                                f"hbm_gbs, l2_gbs, vl1d_gbs, lds_gbs, valu_f32_tflops, mfma_f16_tflops, mfma_i8_tiops, ...)")
        number = _positive(value)
        if number is None:
            raise RocmPerfError(f"{shown}: peak {name} must be a positive number, got {value!r}")
        peaks[key] = number * _UNIT_SUFFIX[suffix]
    return peaks
