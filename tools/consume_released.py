#!/usr/bin/python3
"""Read privatized windows from gcdp.released with kafka-python (Debian python3-kafka), a
Kafka client that is not built on librdkafka, and print one line per record with a 95 %
interval per coordinate (docs/consumers.md explains what they mean).

usage: consume_released.py BOOTSTRAP [--topic gcdp.released] [--group G] [--idle-s 5]
                                     [--json]
Reads from the earliest offset of a fresh group (or G's committed position) until nothing
arrives for --idle-s seconds; exits 0 after printing "records N" to stderr.
"""
import argparse
import json
import math
import sys

from kafka import KafkaConsumer


def interval(value, scale, mechanism):
    """Half-width of a 95 % interval around value for a coordinate released with noise
    scale b: Laplace(b) has P(|X| > t) = exp(-t/b); Gaussian(sigma): 1.96 sigma."""
    if scale == 0:
        return 0.0
    if mechanism == "gauss":
        return 1.959963984540054 * scale
    return -math.log(0.05) * scale


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bootstrap")
    ap.add_argument("--topic", default="gcdp.released")
    ap.add_argument("--group", default=None)
    ap.add_argument("--idle-s", type=float, default=5.0)
    ap.add_argument("--json", action="store_true", help="print the records as JSON lines")
    a = ap.parse_args()
    consumer = KafkaConsumer(a.topic, bootstrap_servers=a.bootstrap, group_id=a.group,
                             auto_offset_reset="earliest", enable_auto_commit=a.group is not None,
                             consumer_timeout_ms=int(a.idle_s * 1000),
                             value_deserializer=lambda b: json.loads(b.decode("utf-8")))
    n = 0
    for msg in consumer:
        r = msg.value
        if r.get("schema") != "gcdp.released/1":
            print(f"skipping a record of schema {r.get('schema')!r}", file=sys.stderr)
            continue
        n += 1
        if a.json:
            print(json.dumps(r, sort_keys=True))
            continue
        parts = []
        for name, v in sorted(r["values"].items()):
            hw = interval(v, r["scale"][name], r["mechanism"])
            parts.append(f"{name}={v:.4g}±{hw:.3g}")
        print(f'{r["device"]} [{r["window_start"]},{r["window_end"]}) theta '
              f'{r["theta_version"]} eps {r["eps_rel"]}: ' + " ".join(parts))
    consumer.close()
    print(f"records {n}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
