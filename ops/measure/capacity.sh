#!/usr/bin/env bash
# ops/measure/capacity.sh - the measured run behind docs/capacity.md: every stage as its own
# process against one embedded broker (the shape of docker/docker-compose.yml), one reading a
# second and one window a minute per device (ingest.period_ms=1000, ingest.window.size_ms=
# 60000), then per process CPU-seconds and peak RSS, per topic records and bytes (read back
# with Debian's python3-kafka), the ledger's audit log and store bytes, and per device-day
# figures. Re-runnable; prints the figures on stdout (key=value lines, then a table).
#
# usage: bash ops/measure/capacity.sh [DEVICES [TICKS [RATE]]]
#   DEVICES  simulated motes (default 200)
#   TICKS    readings per device = simulated seconds (default 900: 15 windows per device)
#   RATE     simulator messages/s, all devices (default 4000); simulated time runs at
#            RATE/DEVICES simulated seconds per wall second
# env: GCDP (binary, default build/release/app/gcdp), KEEP=1 keeps the run directory.
# Needs: a release build (bash ops/build.sh release), /usr/bin/python3 with python3-kafka,
# curl (all in ops/install-deps.sh).
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GCDP=${GCDP:-$ROOT/build/release/app/gcdp}
DEVICES=${1:-200}
TICKS=${2:-900}
RATE=${3:-4000}
PARTITIONS=${PARTITIONS:-32} # the mock keeps 5 MiB per partition: 32 keep 300,000 readings (~55 MB) whole
DIR=$(mktemp -d /tmp/gcdp-capacity.XXXXXX)
CLK=$(getconf CLK_TCK)
declare -A PID=()

cleanup() {
    for n in "${!PID[@]}"; do kill "${PID[$n]}" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ "${KEEP:-0}" = 1 ] && echo "run directory: $DIR" >&2 || rm -rf "$DIR"
}
trap cleanup EXIT

[ -x "$GCDP" ] || { echo "no $GCDP: bash ops/build.sh release" >&2; exit 2; }

# One port per service for /metrics (free ones, chosen by the kernel).
free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
metric() { # metric PORT NAME -> sum of the series' values (0 when absent)
    curl -s "127.0.0.1:$1/metrics" | awk -v n="$2" '$1==n || index($1,n"{")==1 {s+=$2} END {printf "%d\n", s}'
}
cpu_s() { # utime+stime of a live process, seconds
    awk -v k="$CLK" '{sub(/^.*\) /,""); printf "%.2f\n", ($12+$13)/k}' "/proc/$1/stat"
}
hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
calc() { awk "BEGIN { printf \"%.4f\", $1 }"; }

# --- the settings (gcdp run's defaults where they matter, one window a minute) ---------
export GCDP_INGEST__PERIOD_MS=1000 GCDP_INGEST__WINDOW__SIZE_MS=60000
export GCDP_INGEST__MAX_INTERP_GAP=0 GCDP_INGEST__MIN_COVERAGE=1
# The last windows of a finite stream close by idle timeout (no watermark passes them): 10 s
# instead of 60 s so that every window of the run is emitted before the figures are taken.
export GCDP_INGEST__IDLE_TIMEOUT_MS=10000
export GCDP_RELEASE__QUERY__MIN_SAMPLES=15 GCDP_RELEASE__EPS_REL=8 GCDP_RELEASE__EPS_MIN=1.9
export GCDP_SIM__AR=0.9
export GCDP_LEARNER__SERVICE__PARTICIPANTS=1 GCDP_LEARNER__SERVICE__MIN_SAMPLES=500
export GCDP_LEARNER__SERVICE__SESSION_INTERVAL_S=15 GCDP_LEARNER__RESCALE=true
export GCDP_LEARNER__LAMBDA=0.01 GCDP_LEARNER__W_THRESHOLD=0.1
export GCDP_LOG_LEVEL=warn

# --- public calibration rows: gcdp run's pilot (its own embedded broker; 2 s) ------------
"$GCDP" run --duration 2 --dir "$DIR/pilot" >/dev/null 2>"$DIR/pilot.log" || true
[ -s "$DIR/pilot/calibration.csv" ] || { echo "no pilot calibration.csv" >&2; exit 1; }

# --- the broker and the services ----------------------------------------------------------
"$GCDP" broker --bootstrap-file "$DIR/kafka.bootstrap" --partitions $PARTITIONS \
    >/dev/null 2>"$DIR/broker.log" &
PID[broker]=$!
for _ in $(seq 100); do [ -s "$DIR/kafka.bootstrap" ] && break; sleep 0.1; done
BOOT=$(cut -d' ' -f2 "$DIR/kafka.bootstrap")
export GCDP_BROKER__BOOTSTRAP=$BOOT GCDP_STATE__DIR=$DIR/state
mkdir -p "$DIR/state"
"$GCDP" ctl keygen --out "$DIR/control.key" >/dev/null 2>&1
export GCDP_CONTROL__KEY_FILE=$DIR/control.key

declare -A PORT=()
start() { # start NAME ARGS...
    local n=$1
    shift
    PORT[$n]=$(free_port)
    "$GCDP" "$@" --set metrics.port="${PORT[$n]}" >"$DIR/$n.json" 2>"$DIR/$n.log" &
    PID[$n]=$!
}
start ingest ingest
start calibrate calibrate --serve -i "$DIR/pilot/calibration.csv"
start release release --serve --set release.ledger.store=ledger.db
start learner_server learn --server
start learner_site learn --participant site-0

for _ in $(seq 300); do # ready: the release has a theta
    [ "$(metric "${PORT[release]}" gcdp_release_theta_version)" != 0 ] && break
    sleep 0.1
done
[ "$(metric "${PORT[release]}" gcdp_release_theta_version)" != 0 ] ||
    { echo "release has no theta after 30 s (see $DIR/*.log; KEEP=1)" >&2; exit 1; }

declare -A CPU0=()
for n in "${!PID[@]}"; do CPU0[$n]=$(cpu_s "${PID[$n]}"); done
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
T0=$(date +%s.%N)

# --- the simulator (its own CPU and peak RSS: getrusage of the child) ---------------------
/usr/bin/python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:], stdout=open(sys.argv[1] + ".json", "w"),
                     stderr=open(sys.argv[1] + ".log", "w"))
u = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1] + ".time", "w").write(f"{u.ru_utime:.2f} {u.ru_stime:.2f} {u.ru_maxrss}\n")
sys.exit(rc)' "$DIR/sim" "$GCDP" simulate --devices "$DEVICES" --ticks "$TICKS" \
    --rate "$RATE" --set metrics.port=0
ACKED=$(/usr/bin/python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["acked"])' "$DIR/sim.json")

# --- drain: ingest read everything and emitted every window (ACKED/60), release read and
# released all of them (or nothing moved for 30 s: then the figures say what was done) ----
prev="" same=0
WANT=$((ACKED / 60))
for _ in $(seq 400); do
    c=$(metric "${PORT[ingest]}" gcdp_ingest_consumed_total)
    w=$(metric "${PORT[ingest]}" gcdp_ingest_windows_out_total)
    r=$(metric "${PORT[release]}" gcdp_release_consumed_total)
    cur="$c $w $r"
    [ "$cur" = "$prev" ] && same=$((same + 1)) || same=0
    if [ "$c" -ge "$ACKED" ] && [ "$w" -ge "$WANT" ] && [ "$r" -ge "$w" ] && [ $same -ge 2 ]; then
        break
    fi
    [ $same -ge 60 ] && { echo "drain: no progress for 30 s ($cur)" >&2; break; }
    prev=$cur
    sleep 0.5
done
T1=$(date +%s.%N)
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

declare -A CPU1=() HWM=()
for n in "${!PID[@]}"; do
    CPU1[$n]=$(cpu_s "${PID[$n]}")
    HWM[$n]=$(hwm_kb "${PID[$n]}")
done
# Idle cost after the work (CPU per wall second with no data: polls, heartbeats, the
# learner's sessions every 15 s on the rows it holds), 10 s.
sleep 10
declare -A CPUI=()
for n in "${!PID[@]}"; do CPUI[$n]=$(cpu_s "${PID[$n]}"); done

# --- stop the services in data-flow order (each prints its JSON summary) ------------------
for n in ingest release calibrate learner_site learner_server; do
    kill -TERM "${PID[$n]}"
    wait "${PID[$n]}" || echo "$n exited $?" >&2
    unset "PID[$n]"
done

# --- topics read back (count + key/value/header bytes; nothing printed but sizes) ---------
/usr/bin/python3 - "$BOOT" >"$DIR/topics.txt" <<'EOF'
import sys
import zlib
from kafka import KafkaConsumer, TopicPartition
topics = ["sensors.raw", "sensors.rejected", "gcdp.windows", "gcdp.windows.rejected",
          "gcdp.calibration", "gcdp.released", "gcdp.audit", "gcdp.status", "gcdp.control",
          "learner.updates", "learner.global", "learner.dag"]
c = KafkaConsumer(bootstrap_servers=sys.argv[1], enable_auto_commit=False, fetch_max_wait_ms=50,
                  max_partition_fetch_bytes=4 << 20, fetch_max_bytes=64 << 20)
for t in topics:
    parts = c.partitions_for_topic(t) or set()
    tps = [TopicPartition(t, p) for p in sorted(parts)]
    n = kb = vb = hb = 0
    buf, zin, zout = {}, 0, 0  # gzip (zlib level 6) of 500-record batches per partition
    if tps:
        c.assign(tps)
        c.seek_to_beginning(*tps)
        end = c.end_offsets(tps)
        begin = c.beginning_offsets(tps)
        left = {tp: end[tp] for tp in tps if end[tp] > 0}
        while left:
            for tp, msgs in c.poll(timeout_ms=1000, max_records=5000).items():
                for m in msgs:
                    n += 1
                    kb += len(m.key or b"")
                    vb += len(m.value or b"")
                    hb += sum(len(k) + len(v or b"") for k, v in (m.headers or []))
                    b = buf.setdefault(tp, [])
                    b.append((m.key or b"") + (m.value or b""))
                    if len(b) == 500:
                        raw = b"".join(b)
                        zin, zout = zin + len(raw), zout + len(zlib.compress(raw, 6))
                        b.clear()
                    if m.offset + 1 >= end[tp]:
                        left.pop(tp, None)
        lost = sum(begin[tp] for tp in tps)
    else:
        lost = 0
    for b in buf.values():
        if b:
            raw = b"".join(b)
            zin, zout = zin + len(raw), zout + len(zlib.compress(raw, 6))
    print(t, n, kb, vb, hb, lost, zin, zout)
c.close()
EOF

BROKER_CPU=$(cpu_s "${PID[broker]}")
BROKER_HWM=$(hwm_kb "${PID[broker]}")
kill -TERM "${PID[broker]}"
wait "${PID[broker]}" || true
unset "PID[broker]"

# --- figures --------------------------------------------------------------------------------
read -r SIM_U SIM_S SIM_KB <"$DIR/sim.time"
led_bytes() { stat -c %s "$DIR/state/$1" 2>/dev/null || echo 0; }
{
    echo "devices=$DEVICES ticks=$TICKS rate=$RATE partitions=$PARTITIONS"
    echo "wall_s=$(calc "$T1 - $T0") load_before=\"$LOAD0\" load_after=\"$LOAD1\""
    echo "sim_acked=$ACKED sim_cpu_s=$(calc "$SIM_U + $SIM_S") sim_hwm_kb=$SIM_KB"
    for n in ingest calibrate release learner_server learner_site broker; do
        echo "proc $n cpu_s=$(calc "${CPU1[$n]} - ${CPU0[$n]}") idle_cpu_per_s=$(calc "(${CPUI[$n]} - ${CPU1[$n]}) / 10") cpu_total_s=${CPU1[$n]} hwm_kb=${HWM[$n]}"
    done
    echo "broker (embedded mock, not Kafka) after the read-back: cpu_total_s=$BROKER_CPU hwm_kb=$BROKER_HWM"
    for f in ledger.jsonl ledger.db ledger.db-wal; do echo "ledger_file $f $(led_bytes $f)"; done
    sed 's/^/topic /' "$DIR/topics.txt"
    for n in ingest release calibrate learner_server learner_site; do
        echo "summary $n $(tail -1 "$DIR/$n.json" | head -c 600)"
    done
} | tee "$DIR/figures.txt"

/usr/bin/python3 - "$DIR/figures.txt" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
kv = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', " ".join(lines[:3])))
dev, ticks = int(kv["devices"]), int(kv["ticks"])
days = dev * ticks / 86400.0  # device-days of simulated time (1 reading/s)
topics = {l.split()[1]: list(map(int, l.split()[2:])) for l in lines if l.startswith("topic ")}
print("gzip (zlib 6) of 500-record batches, key+value: compressed/raw per topic: " + ", ".join(
    f"{t} {v[6] / v[5]:.3f}" for t, v in topics.items() if v[5] > 0))
procs = {l.split()[1]: dict(re.findall(r'(\w+)=(\S+)', l)) for l in lines if l.startswith("proc ")}
led = {l.split()[1]: int(l.split()[2]) for l in lines if l.startswith("ledger_file ")}
rd = topics["sensors.raw"][0]; win = topics["gcdp.windows"][0]; rel = topics["gcdp.released"][0]
print(f"\nsimulated device-days {days:.4f} (readings on sensors.raw {rd}, windows {win}, released {rel})")
print("per device-day (x 86,400 readings, 1,440 windows; measured per-unit figures):")
print(f"  {'topic':24s} {'records/dev-day':>16s} {'bytes/record':>13s} {'MB/dev-day':>11s}")
unit = {"sensors.raw": rd, "gcdp.windows": win, "gcdp.released": rel}
for t, (n, kb, vb, hb, lost, _, _) in topics.items():
    if n == 0:
        continue
    b = (kb + vb + hb) / n
    per = n / days if t not in unit else (86400 if t == "sensors.raw" else 1440)
    print(f"  {t:24s} {per:16.1f} {b:13.1f} {per * b / 1e6:11.4f}" + (f"  (lost {lost})" if lost else ""))
au = led.get("ledger.jsonl", 0); db = led.get("ledger.db", 0) + led.get("ledger.db-wal", 0)
if rel:
    print(f"  ledger audit log: {au / rel:.1f} B/release = {1440 * au / rel / 1e6:.4f} MB/dev-day;"
          f" store (db+wal): {db / rel:.1f} B/release (no horizon)")
wall = float(kv.get("wall_s", "0") or 0)
print(f"wall seconds of the measured phase: {wall:.1f} (simulator start to drained)")
print("  cpu_s/dev-day and per unit: the run's CPU minus idle_cpu_per_s x wall, over the units")
print(f"  {'process':16s} {'cpu_s (run)':>11s} {'idle cpu/s':>10s} {'cpu_s/dev-day':>13s} {'per unit':>22s} {'peak RSS MiB':>12s}")
for n, p in procs.items():
    if "cpu_s" not in p:
        continue
    c0 = float(p["cpu_s"]); h = int(p["hwm_kb"]) / 1024
    idle = float(p["idle_cpu_per_s"]); c = max(0.0, c0 - idle * wall)
    per = (f"{1e6 * c / rd:.1f} us/reading" if n == "ingest" else
           f"{1e6 * c / rel:.0f} us/release" if rel and n in ("release", "learner_site") else "")
    print(f"  {n:16s} {c0:11.2f} {idle:10.4f} {c / days:13.3f} {per:>22s} {h:12.1f}")
c = float(kv["sim_cpu_s"])
print(f"  {'simulator':16s} {c:11.2f} {'-':>10s} {c / days:13.3f} {1e6 * c / rd:15.1f} us/msg {int(kv['sim_hwm_kb']) / 1024:12.1f}")
EOF
