#!/usr/bin/env python3
"""offline_windows.py - independent offline computation of gcdp ingest windows.

Reads a UCI Occupancy CSV (R write.csv: 7 header names, 8 fields per row -- an unnamed,
quoted row id first; the date quoted in datatraining/datatest, unquoted in datatest2) or a
JSONL file of gcdp.reading/1 messages, and prints the window records (JSONL, one per line,
sorted by device then window_start) that `gcdp ingest` must produce for the same
configuration, following docs/ingest.md "Windows" -- written from that text, not from the C.

The replay mapping is the one `gcdp replay --format occupancy` uses: device = --device,
ts = the date column as UTC, readings {temperature, humidity, light, co2, humidity_ratio}
from Temperature, Humidity, Light, CO2, HumidityRatio; the Occupancy label is dropped.

Assumes a clean stream (no late, duplicate or invalid readings; the UCI files are clean):
every reading then lands in every window it belongs to, whatever the arrival order.

Usage:
  offline_windows.py --csv ../shared/data/occupancy/datatraining.txt [--device occupancy]
      [--config gcdp.json] [--set ingest.window.size_ms=900000 ...] [--config-version HEX]
"""
import argparse
import csv
import datetime
import json
import math
import sys

# Defaults of the ingest.* keys (ingest/src/svc/config_keys.c), restated.
DEFAULTS = {
    "ingest.window.size_ms": 900000,
    "ingest.window.hop_ms": 0,
    "ingest.window.origin_ms": 0,
    "ingest.split_at_ms": None,
    "ingest.period_ms": 60000,
    "ingest.max_interp_gap": 2,
    "ingest.min_coverage": 0.5,
    "ingest.features": ["mean"],
    "ingest.emit_excluded": True,
    "ingest.nodes": [],
    "ingest.channels": {
        "temperature": {"domain": [-40, 125], "clip": [10, 40]},
        "humidity": {"domain": [0, 100], "clip": [0, 100]},
        "light": {"domain": [0, 100000], "clip": [0, 2000]},
        "voltage": {"domain": [0, 5], "clip": [2, 3]},
        "co2": {"domain": [0, 10000], "clip": [300, 2500]},
        "humidity_ratio": {"domain": [0, 0.1], "clip": [0.001, 0.01]},
    },
}
FEATURE_ORDER = ["mean", "count", "min", "max", "std"]
CSV_MAP = [("temperature", "Temperature"), ("humidity", "Humidity"), ("light", "Light"),
           ("co2", "CO2"), ("humidity_ratio", "HumidityRatio")]


def flatten(obj, prefix=""):
    out = {}
    for k, v in obj.items():
        key = prefix + k
        if isinstance(v, dict) and key != "ingest.channels":
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def load_config(args):
    cfg = dict(DEFAULTS)
    if args.config:
        with open(args.config) as f:
            for k, v in flatten(json.load(f)).items():
                if k.startswith("ingest."):
                    cfg[k] = v
    for s in args.set or []:
        k, _, v = s.partition("=")
        try:
            cfg[k] = json.loads(v)
        except ValueError:
            cfg[k] = v
    return cfg


EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def utc_ms(text):
    """RFC 3339 or 'YYYY-MM-DD HH:MM:SS[.f]' (no zone = UTC) -> epoch ms, sub-ms truncated."""
    dt = datetime.datetime.fromisoformat(text.replace("z", "Z"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    return (dt - EPOCH) // datetime.timedelta(milliseconds=1)


def read_occupancy(path, device):
    rows = []
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        assert len(header) == 7, "expected the 7 R write.csv header names"
        for line_no, row in enumerate(reader, start=2):
            if len(row) != 8:
                raise SystemExit(f"{path}:{line_no}: expected 8 fields, got {len(row)}")
            values = {name: float(row[2 + i]) for i, (name, _) in enumerate(CSV_MAP)}
            rows.append({"device": device, "ts": utc_ms(row[1]), "values": values})
    return rows


def read_jsonl(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.strip():
                m = json.loads(line)
                ts = m["ts"]
                if isinstance(ts, str):
                    ts = utc_ms(ts)
                vals = {k: float(v) for k, v in m["readings"].items() if v is not None}
                rows.append({"device": m["device"], "ts": ts, "values": vals})
    return rows


class Spec:
    def __init__(self, cfg):
        self.size = int(cfg["ingest.window.size_ms"])
        self.hop = int(cfg["ingest.window.hop_ms"]) or self.size
        self.origin = int(cfg["ingest.window.origin_ms"])
        self.split = cfg["ingest.split_at_ms"]
        self.period = int(cfg["ingest.period_ms"])
        self.max_gap = int(cfg["ingest.max_interp_gap"])
        self.min_cov = float(cfg["ingest.min_coverage"])
        self.features = [f for f in FEATURE_ORDER if f in cfg["ingest.features"]]
        self.channels = list(cfg["ingest.channels"].items())  # declaration order
        self.nodes = list(cfg["ingest.nodes"])
        self.emit_excluded = bool(cfg["ingest.emit_excluded"])
        self.slots = self.size // self.period

    def slot_time(self, ts):
        # nearest point of the sampling grid, ties up
        return self.origin + ((ts - self.origin + self.period // 2) // self.period) * self.period


def window_starts(spec, tau):
    """Starts s = origin + k*hop with s <= tau < s + size."""
    k = (tau - spec.origin) // spec.hop
    starts = []
    while spec.origin + k * spec.hop + spec.size > tau:
        starts.append(spec.origin + k * spec.hop)
        k -= 1
    return starts


def channel_result(spec, name, clip, pts, start):
    """pts: [(tau, ts, x)] of real samples of one channel, sorted by ts."""
    lo, hi = clip
    by_slot = {}
    for tau, ts, x in pts:
        by_slot.setdefault((tau - start) // spec.period, []).append((ts, x))
    occupied = sorted(by_slot)
    if len(occupied) == 0 or not (len(occupied) / spec.slots >= spec.min_cov):
        return "low_coverage", None
    for a, b in zip(occupied, occupied[1:]):
        if b - a - 1 > spec.max_gap:
            return "long_gap", None
    series, imputed = [], []
    for j in range(occupied[0], occupied[-1] + 1):
        if j in by_slot:
            series.extend(x for _, x in by_slot[j])
            continue
        before = max(s for s in occupied if s < j)
        after = min(s for s in occupied if s > j)
        ta, xa = by_slot[before][-1]
        tb, xb = by_slot[after][0]
        tj = start + j * spec.period
        series.append(xa + (xb - xa) * ((tj - ta) / (tb - ta)))
        imputed.append(tj)
    u = [(min(max(x, lo), hi) - lo) / (hi - lo) for x in series]
    total = 0.0
    for v in u:
        total += v
    mean = total / len(u)
    ss = 0.0
    for v in u:
        ss += (v - mean) * (v - mean)
    feats = {"mean": mean, "count": min(1.0, len(pts) / spec.slots), "min": min(u),
             "max": max(u), "std": math.sqrt(ss / len(u))}
    return None, (feats, len(pts), imputed)


def utc_text(ms):
    dt = datetime.datetime.fromtimestamp(ms // 1000, tz=datetime.timezone.utc)
    frac = ms % 1000
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac:03d}Z" if frac else "Z")


def make_window(spec, device, start, rows, version):
    end = start + spec.size
    rec = {"schema": "gcdp.window/2", "id": f"{device}|{start}|{version}", "device": device,
           "window_start": start, "window_end": end, "window_start_utc": utc_text(start),
           "window_end_utc": utc_text(end), "config_version": version, "n": len(rows),
           "n_slots": spec.slots}
    names = [c for c, _ in spec.channels]
    if spec.nodes:
        node_ch = [c for c in spec.nodes]
    else:
        node_ch = [c for c in names if any(c in r["values"] for r in rows)]
    results, excl = {}, None
    if not node_ch:
        excl = "no_data"
    for c in node_ch:
        if excl:
            break
        pts = [(r["tau"], r["ts"], r["values"][c]) for r in rows if c in r["values"]]
        excl, results[c] = channel_result(spec, c, dict(spec.channels)[c]["clip"], pts, start)
    if excl:
        rec.update({"excluded": True, "exclude_reason": excl})
        return rec
    def node(c, f):
        return f"{c}.{f}"  # gcdp.window/2: the statistic is always in the name
    def longest_run(slots):
        best = run = 0
        for i, t in enumerate(slots):
            run = run + 1 if i and t - slots[i - 1] == spec.period else 1
            best = max(best, run)
        return best
    def num(x):
        return int(x) if float(x).is_integer() else float(x)
    clip = {c: dict(spec.channels)[c]["clip"] for c in node_ch}
    rec["excluded"] = False
    rec["nodes"] = {node(c, f): results[c][0][f] for c in node_ch for f in spec.features}
    rec["n_node"] = {node(c, f): results[c][1] for c in node_ch for f in spec.features}
    rec["imputed"] = {node(c, f): results[c][2] for c in node_ch for f in spec.features}
    rec["prov"] = {"interp_gap": spec.max_gap, "period_ms": spec.period, "norm": "clip_minmax",
                   "nodes": {node(c, f): {"stat": f, "channel": c,
                                          "clip": [num(clip[c][0]), num(clip[c][1])],
                                          "n_imputed": len(results[c][2]),
                                          "max_run": longest_run(results[c][2])}
                             for c in node_ch for f in spec.features}}
    return rec


def windows(spec, readings, version):
    per_window = {}
    for r in readings:
        r["tau"] = spec.slot_time(r["ts"])
        for s in window_starts(spec, r["tau"]):
            per_window.setdefault((r["device"], s), []).append(r)
    out = []
    for (device, start) in sorted(per_window):
        if spec.split is not None and start < spec.split < start + spec.size:
            continue  # never formed: it would cross the split boundary
        rows = sorted(per_window[(device, start)], key=lambda r: r["ts"])
        rec = make_window(spec, device, start, rows, version)
        if rec["excluded"] and not spec.emit_excluded:
            continue
        out.append(rec)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--csv", help="UCI Occupancy CSV file")
    src.add_argument("--jsonl", help="gcdp.reading/1 messages, one per line")
    ap.add_argument("--device", default="occupancy", help="device id for --csv (default occupancy)")
    ap.add_argument("--config", help="gcdp JSON config file (ingest.* keys are used)")
    ap.add_argument("--set", action="append", help="KEY=JSON override (repeatable)")
    ap.add_argument("--config-version", default="0000000000000000",
                    help="config_version to put in ids (gcdp prints it; default 0000000000000000)")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N rows (0 = all)")
    args = ap.parse_args()
    spec = Spec(load_config(args))
    readings = read_occupancy(args.csv, args.device) if args.csv else read_jsonl(args.jsonl)
    if args.limit:
        readings = readings[:args.limit]
    for rec in windows(spec, readings, args.config_version):
        sys.stdout.write(json.dumps(rec, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
