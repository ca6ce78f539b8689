#!/bin/bash
# Create every topic a gcdp service uses (the topics.* keys' defaults; `gcdp config keys`),
# with partitions, retention and cleanup policy. Idempotent (--if-not-exists). Runs as the
# one-shot `kafka-init` service of docker/docker-compose.yml with the apache/kafka image's
# kafka-topics.sh, and against a production cluster as in docs/deploy.md.
#
#   init-topics.sh [--dry-run]     --dry-run: print the kafka-topics.sh commands, run nothing
#
# Environment:
#   BOOTSTRAP           bootstrap servers (default kafka:9092)
#   REPLICATION_FACTOR  replicas per topic (default 1; production: >= 3)
#   MIN_INSYNC_REPLICAS min.insync.replicas (default 1; production: 2 with 3 replicas)
#   PARTITIONS          partitions of the per-device data topics (default 4): the most
#                       ingest / release consumers that can share the work
#   COMMAND_CONFIG      a client properties file for the cluster's security settings
#                       (passed as --command-config; e.g. SASL_SSL credentials)
#   KAFKA_TOPICS        kafka-topics.sh to use (default /opt/kafka/bin/kafka-topics.sh)
#   WAIT_S              how long to wait for the cluster to answer (default 120)
#
# PROTECTED topics hold values gcdp's privacy guarantee covers, unprivatized: sensors.raw,
# gcdp.windows, and the dead letters sensors.rejected and gcdp.windows.rejected (a dead letter
# carries the original payload); gcdp.ledger.changelog (the release ledgers' rows: device
# ids, slots and budgets of every release, for the release instances only) is protected too.
#   CHANGELOG_RETENTION_MS  retention.ms of gcdp.ledger.changelog (default -1: forever);
#                           >= release.ledger.replay_horizon_ms Kafka has no topic labels, so they are marked here (the
# PROTECTED column), in the log line this script prints, and by their short retention; give
# them ACLs that only the gcdp services' principals can read (docs/deploy.md). Only
# gcdp.released, gcdp.calibration (public θ), gcdp.status and learner.* are meant for readers
# outside the pipeline.
set -euo pipefail

DRY=0
[ "${1:-}" = "--dry-run" ] && DRY=1
BOOTSTRAP="${BOOTSTRAP:-kafka:9092}"
RF="${REPLICATION_FACTOR:-1}"
MINISR="${MIN_INSYNC_REPLICAS:-1}"
P="${PARTITIONS:-4}"
KT="${KAFKA_TOPICS:-/opt/kafka/bin/kafka-topics.sh}"
WAIT_S="${WAIT_S:-120}"
H=3600000 # one hour in ms
D=$((24 * H))
# The ledger changelog must keep every row the release ledgers may still need:
# retention.ms >= release.ledger.replay_horizon_ms; -1 (forever) while that is 0, its
# default (docs/release.md, "Several instances"). Key = release id: compaction drops only
# the repeated rows of replays.
CL_RET="${CHANGELOG_RETENTION_MS:--1}"

# name                  partitions  cleanup  retention.ms  PROTECTED  what
TOPICS="
sensors.raw             $P          delete   $((7 * D))    protected  raw readings (ingest input)
sensors.rejected        $P          delete   $D            protected  ingest dead letters (original payloads)
gcdp.windows            $P          delete   $((3 * D))    protected  window records (release input)
gcdp.windows.rejected   $P          delete   $D            protected  release dead letters (window records)
gcdp.ledger.changelog   $P          compact,delete $CL_RET protected ledger rows of the release instances (co-partitioned with gcdp.windows)
gcdp.released           $P          delete   $((30 * D))   public     privatized releases
gcdp.calibration        1           compact  -1            public     theta versions (key = version)
gcdp.control            1           delete   $D            public     signed operator commands
gcdp.status             1           delete   $((7 * D))    public     service status records
gcdp.audit              1           delete   $((365 * D))  public     privacy ledger events
learner.updates         $P          delete   $((7 * D))    public     participant -> server
learner.global          1           delete   $((7 * D))    public     server -> participants
learner.dag             1           delete   $((365 * D))  public     learned DAGs
"

kt() {
    local args=(--bootstrap-server "$BOOTSTRAP")
    [ -n "${COMMAND_CONFIG:-}" ] && args+=(--command-config "$COMMAND_CONFIG")
    if [ "$DRY" = 1 ]; then
        echo "$KT ${args[*]} $*"
    else
        "$KT" "${args[@]}" "$@"
    fi
}

if [ "$DRY" = 0 ]; then
    deadline=$((SECONDS + WAIT_S))
    until kt --list >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "init-topics: $BOOTSTRAP did not answer within ${WAIT_S}s" >&2
            exit 1
        fi
        sleep 2
    done
fi

while read -r name parts cleanup retention class what; do
    [ -z "$name" ] && continue
    cfgs=(--config "cleanup.policy=$cleanup" --config "min.insync.replicas=$MINISR")
    [ "$cleanup" != compact ] && cfgs+=(--config "retention.ms=$retention")
    kt --create --if-not-exists --topic "$name" --partitions "$parts" \
        --replication-factor "$RF" "${cfgs[@]}"
    [ "$DRY" = 1 ] || echo "init-topics: $name ($class; $what): $parts partitions, $cleanup" \
        "$([ "$cleanup" != compact ] && echo "retention ${retention} ms")" >&2
done <<<"$TOPICS"
