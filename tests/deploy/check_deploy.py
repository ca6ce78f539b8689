#!/usr/bin/python3
"""Deployment files against the built gcdp (ctest -R deploy; label unit; no container engine).

1. docker/docker-compose.yml validates with Debian's docker-compose 1.29 (`config`, also with
   `--profile sim`); the resolved file (anchors, ${VAR:-default}) is what the rest reads.
2. Every gcdp service's command, with the image's ENV and its own environment, runs against
   the built binary with `--check` appended and must print "configuration ok" and exit 0.
   Container paths (volumes, bind mounts, secrets, the image's WORKDIR) are mapped into a
   scratch directory holding what the deployment provides there: a control key made by
   `gcdp ctl keygen`, the public calibration file (UCI Occupancy datatest.txt), empty volumes.
3. Every topic in any service's effective configuration (`gcdp config show`, topics.*) is
   created by docker/init-topics.sh (its --dry-run commands); gcdp.calibration compacted; the
   dead-letter topics marked protected with a retention of at most one day.
4. The Dockerfile's build stage runs the README's build (the install-deps and build commands
   of ops/run.sh, which the README's run command is); its final stage is non-root, with gcdp
   as the entrypoint, a HEALTHCHECK through `gcdp healthcheck`, and installs the Debian
   package of every shared library the built binary links.
5. `gcdp healthcheck` against a real HTTP server: 200 -> 0, 503 -> 1, refused -> 1.
Exit 0 when everything holds; 1 with the failures listed.
"""
import argparse
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

import yaml

FAIL = []


def fail(msg):
    FAIL.append(msg)
    print("FAIL: " + msg)


def ok(msg):
    print("ok:   " + msg)


SANITIZER_ENV = {k: v for k, v in os.environ.items()
                 if k.startswith(("ASAN_", "LSAN_", "UBSAN_"))}  # the debug preset's settings


def run(argv, env=None, cwd=None, timeout=60):
    if env is not None:
        env = dict(SANITIZER_ENV, **env)
    p = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def compose_config(src):
    f = os.path.join(src, "docker", "docker-compose.yml")
    resolved = None
    for extra in ([], ["--profile", "sim"]):
        rc, out, err = run(["docker-compose", "-f", f] + extra + ["config"], cwd=src)
        if rc != 0:
            fail("docker-compose %s config: exit %d: %s" % (" ".join(extra), rc, err.strip()))
            continue
        ok("docker-compose -f docker/docker-compose.yml %sconfig exits 0" %
           (" ".join(extra) + " " if extra else ""))
        resolved = yaml.safe_load(out)
    return resolved


def check_kafka(cfg):
    """The KRaft node formats its storage with CLUSTER_ID: a UUID in base64url (22 chars)."""
    import base64
    env = cfg["services"]["kafka"].get("environment") or {}
    cid = str(env.get("CLUSTER_ID", ""))
    try:
        good = len(cid) == 22 and len(base64.urlsafe_b64decode(cid + "==")) == 16
    except ValueError:
        good = False
    if not good:
        fail("kafka: CLUSTER_ID %r is not a UUID in base64url (kafka-storage.sh random-uuid)"
             % cid)
    roles = str(env.get("KAFKA_PROCESS_ROLES", ""))
    if set(roles.split(",")) != {"broker", "controller"}:
        fail("kafka: KAFKA_PROCESS_ROLES %r is not a one-node KRaft broker,controller" % roles)
    if not str(cfg["services"]["kafka"].get("image", "")).startswith("apache/kafka:"):
        fail("kafka: not the official apache/kafka image")
    init = cfg["services"].get("kafka-init", {})
    for name, svc in cfg["services"].items():
        if "build" in svc and \
                (svc.get("depends_on") or {}).get("kafka-init", {}).get("condition") != \
                "service_completed_successfully":
            fail("%s does not wait for kafka-init to complete successfully" % name)
    if (init.get("depends_on") or {}).get("kafka", {}).get("condition") != "service_healthy":
        fail("kafka-init does not wait for a healthy kafka")
    ok("kafka: apache/kafka, KRaft broker+controller, valid CLUSTER_ID; services wait for "
       "kafka-init, kafka-init for a healthy kafka")


def dockerfile_stages(src):
    stages, cur = [], None
    text = open(os.path.join(src, "docker", "Dockerfile")).read()
    text = re.sub(r"\\\n", " ", text)  # continuation lines
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "FROM":
            cur = {"from": rest.strip(), "ins": []}
            stages.append(cur)
        elif cur is not None:
            cur["ins"].append((word, rest.strip()))
    return stages


def image_env(final):
    env = {}
    for word, rest in final["ins"]:
        if word == "ENV":
            for m in re.finditer(r"(\w+)=(\S+)", rest):
                env[m.group(1)] = m.group(2)
    return env


def check_dockerfile(src, stages, gcdp):
    if len(stages) < 2:
        fail("Dockerfile: expected a build stage and a runtime stage, found %d" % len(stages))
        return
    build, final = stages[0], stages[-1]
    if not re.match(r"debian:bookworm(\s|$)", build["from"]):
        fail("Dockerfile build stage is FROM %s, not debian:bookworm" % build["from"])
    if not final["from"].startswith("debian:bookworm"):
        fail("Dockerfile final stage is FROM %s, not Debian bookworm" % final["from"])
    # The README's run command is ops/run.sh: its install and build lines are the README's build.
    readme = open(os.path.join(src, "README.md")).read()
    if "ops/run.sh" not in readme or "ops/install-deps.sh && ops/build.sh" not in readme:
        fail("README.md no longer names ops/run.sh and `ops/install-deps.sh && ops/build.sh`")
    want = [l.strip() for l in open(os.path.join(src, "ops", "run.sh"))
            if re.match(r"\s*bash ops/(install-deps|build)\.sh", l)]
    want = [re.sub(r"\s*>.*$", "", w) for w in want]  # output redirections are not the build
    runs = [rest for word, rest in build["ins"] if word == "RUN"]
    pos = -1
    for w in want:
        idx = [i for i, r in enumerate(runs) if r == w]
        if not idx or idx[0] <= pos:
            fail("Dockerfile build stage does not RUN `%s` (in ops/run.sh's order); RUNs: %s"
                 % (w, runs))
        else:
            pos = idx[0]
    if len(want) == 2 and pos >= 0:
        ok("Dockerfile build stage runs the README's build: %s" % " then ".join(want))
    ins = dict((w, r) for w, r in final["ins"])
    users = [r for w, r in final["ins"] if w == "USER"]
    if not users or users[-1] in ("root", "0"):
        fail("Dockerfile final stage runs as root")
    if json.loads(ins.get("ENTRYPOINT", "[]"))[:1] != ["gcdp"]:
        fail("Dockerfile ENTRYPOINT is not gcdp: %s" % ins.get("ENTRYPOINT"))
    if "gcdp" not in ins.get("HEALTHCHECK", "") or "healthcheck" not in ins.get("HEALTHCHECK", ""):
        fail("Dockerfile HEALTHCHECK does not run `gcdp healthcheck`: %s" % ins.get("HEALTHCHECK"))
    if not any(w == "COPY" and "--from=build" in r and "build/release/app/gcdp" in r
               for w, r in final["ins"]):
        fail("Dockerfile final stage does not copy build/release/app/gcdp from the build stage")
    check_runtime_libs(final, gcdp)


def check_runtime_libs(final, gcdp):
    apt = " ".join(r for w, r in final["ins"] if w == "RUN" and "apt-get install" in r)
    pkgs = set(re.findall(r"\b(lib[\w.+-]+|ca-certificates|graphviz)\b", apt))
    base = {"libc6", "libgcc-s1"}  # in every Debian image
    rc, out, err = run(["ldd", gcdp])
    if rc != 0:
        fail("ldd %s: %s" % (gcdp, err))
        return
    libs = {}  # soname -> candidate paths (usrmerge: /lib and /usr/lib name the same file)
    for m in re.finditer(r"^\s*(\S+) => (/\S+)", out, re.M):
        soname, path = m.group(1), m.group(2)
        if re.match(r"lib(asan|ubsan|lsan|tsan)\b", soname):
            continue  # sanitizer runtimes of the debug build; the image is the release build
        alt = "/usr" + path if path.startswith("/lib") else path.replace("/usr", "", 1)
        libs[soname] = {path, os.path.realpath(path), alt}
    _, o, _ = run(["dpkg", "-S"] + sorted(set().union(*libs.values())))  # one call: slow
    owner_of = {}
    for line in o.splitlines():
        pkg, _, path = line.partition(": ")
        owner_of[path.strip()] = pkg.split(":")[0].split(",")[0].strip()
    closure = dependency_closure(pkgs)
    missing = []
    for soname, paths in sorted(libs.items()):
        owners = {owner_of[p] for p in paths if p in owner_of}
        if not owners:
            fail("ldd: %s (%s) belongs to no Debian package" % (soname, sorted(paths)[0]))
        elif not owners & (closure | base):
            missing.append("%s (%s)" % (sorted(owners)[0], soname))
    if missing:
        fail("Dockerfile runtime stage lacks packages of linked libraries: %s" % ", ".join(missing))
    else:
        ok("Dockerfile runtime stage installs the package of all %d libraries gcdp links"
           % len(libs))


def dependency_closure(pkgs):
    """pkgs and their recursive Depends/Pre-Depends, from this machine's dpkg database."""
    _, o, _ = run(["dpkg-query", "-W", "-f=${Package}\t${Depends},${Pre-Depends}\n"])
    deps = {}
    for line in o.splitlines():
        name, _, d = line.partition("\t")
        deps[name] = [x.strip().split(" ")[0].split(":")[0]
                      for alt in d.split(",") for x in alt.split("|") if x.strip()]
    seen, todo = set(), list(pkgs)
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo.extend(deps.get(p, []))
    return seen


class Sandbox:
    """Container paths of one service mapped under a scratch root."""

    def __init__(self, root, svc, cfg, workdir, gcdp, data):
        self.root, self.prefixes = root, []
        for v in svc.get("volumes", []):
            tgt = v["target"] if isinstance(v, dict) else v.split(":")[1]
            src = v.get("source", "") if isinstance(v, dict) else v.split(":")[0]
            self.prefixes.append(tgt)
            os.makedirs(self.map(tgt), exist_ok=True)
            if src.endswith("/calibration"):  # the operator's public calibration file
                shutil.copy(os.path.join(data, "occupancy", "datatest.txt"),
                            os.path.join(self.map(tgt), "calibration.csv"))
        for s in svc.get("secrets", []):
            name = s["source"] if isinstance(s, dict) else s
            tgt = s.get("target", "/run/secrets/" + name) if isinstance(s, dict) else \
                "/run/secrets/" + name
            if not tgt.startswith("/"):
                tgt = "/run/secrets/" + tgt
            self.prefixes.append(tgt)
            os.makedirs(os.path.dirname(self.map(tgt)), exist_ok=True)
            rc, o, e = run([gcdp, "ctl", "keygen", "--out", self.map(tgt)])
            if rc != 0:
                fail("gcdp ctl keygen for secret %s: %s" % (name, e))
        self.prefixes.append(workdir)
        os.makedirs(self.map(workdir), exist_ok=True)

    def map(self, s):
        return self.root + s

    def rewrite(self, s):
        for p in sorted(self.prefixes, key=len, reverse=True):
            if s == p or s.startswith(p.rstrip("/") + "/"):
                return self.map(s)
        return s


def service_argv(svc):
    ep = svc.get("entrypoint") or ["gcdp"]
    ep = [ep] if isinstance(ep, str) else ep
    cmd = svc.get("command") or []
    cmd = cmd.split() if isinstance(cmd, str) else cmd
    return [a.replace("$$", "$") for a in ep + cmd]  # compose's escape of a literal $


def check_services(cfg, stages, gcdp, data, scratch):
    final = stages[-1]
    workdir = [r for w, r in final["ins"] if w == "WORKDIR"][-1]
    base_env = image_env(final)
    bindir = os.path.dirname(gcdp)
    topics = {}
    for name, svc in sorted(cfg["services"].items()):
        if "build" not in svc:
            continue  # kafka, kafka-init: not gcdp
        sb = Sandbox(os.path.join(scratch, name), svc, cfg, workdir, gcdp, data)
        env = {"PATH": bindir + ":/usr/bin:/bin", "HOME": sb.map(workdir)}
        for k, v in list(base_env.items()) + list((svc.get("environment") or {}).items()):
            env[k] = sb.rewrite(str(v))
        argv = [sb.rewrite(a) for a in service_argv(svc)]
        rc, out, err = run([gcdp, "config", "show"], env=env, cwd=sb.map(workdir))
        if rc != 0:
            fail("%s: gcdp config show with its environment: exit %d: %s" % (name, rc, err))
        else:
            for k, v in json.loads(out).items():
                if k.startswith("topics."):
                    topics.setdefault(v, []).append("%s (%s)" % (name, k))
        if name == "simulator":
            continue  # a producer without --check; its configuration is checked above
        rc, out, err = run(argv + ["--check"], env=env, cwd=sb.map(workdir))
        if rc != 0 or "configuration ok" not in out:
            fail("%s: `%s --check`: exit %d, stdout %r, stderr %r" %
                 (name, " ".join(argv), rc, out.strip(), err.strip()))
        else:
            ok("%s: `%s --check`: %s" % (name, " ".join(service_argv(svc)), out.strip()))
    return topics


def check_topics(src, topics):
    rc, out, err = run(["bash", os.path.join(src, "docker", "init-topics.sh"), "--dry-run"])
    if rc != 0:
        fail("init-topics.sh --dry-run: exit %d: %s" % (rc, err))
        return
    created = {}
    for line in out.splitlines():
        m = re.search(r"--create .*--topic (\S+)", line)
        if m:
            created[m.group(1)] = line
    absent = [t for t in topics if t not in created]
    for t in sorted(absent):
        fail("topic %s (used by %s) is not created by init-topics.sh" %
             (t, ", ".join(topics[t])))
    if not absent:
        ok("init-topics.sh creates all %d topics the services use: %s"
           % (len(topics), " ".join(sorted(topics))))
    if "cleanup.policy=compact" not in created.get("gcdp.calibration", ""):
        fail("init-topics.sh: gcdp.calibration is not compacted")
    script = open(os.path.join(src, "docker", "init-topics.sh")).read()
    for t in ("sensors.rejected", "gcdp.windows.rejected"):
        row = re.search(r"^%s\s+\S+\s+(\S+)\s+(\S+)\s+(\S+)" % re.escape(t), script, re.M)
        m = re.search(r"retention\.ms=(\d+)", created.get(t, ""))
        if not row or row.group(3) != "protected":
            fail("init-topics.sh: %s is not marked protected" % t)
        elif not m or int(m.group(1)) > 86400000:
            fail("init-topics.sh: %s keeps protected payloads longer than a day" % t)
    ok("gcdp.calibration compacted; sensors.rejected, gcdp.windows.rejected protected, <= 1 day")
    cl, win = created.get("gcdp.ledger.changelog", ""), created.get("gcdp.windows", "")
    row = re.search(r"^gcdp\.ledger\.changelog\s+\S+\s+\S+\s+\S+\s+(\S+)", script, re.M)
    parts = [re.search(r"--partitions (\S+)", x) for x in (cl, win)]
    if not row or row.group(1) != "protected":
        fail("init-topics.sh: gcdp.ledger.changelog is not marked protected")
    elif not all(parts) or parts[0].group(1) != parts[1].group(1):
        fail("init-topics.sh: gcdp.ledger.changelog does not have gcdp.windows' partitions")
    elif "retention.ms=-1" not in cl or "cleanup.policy=compact,delete" not in cl:
        fail("init-topics.sh: gcdp.ledger.changelog is not compact,delete with retention.ms=-1 "
             "(the default release.ledger.replay_horizon_ms is 0: rows are needed forever)")
    else:
        ok("gcdp.ledger.changelog protected, co-partitioned with gcdp.windows, kept forever")


def check_refusals(gcdp, scratch, data_file):
    """--check exits 2 naming the key or flag, and creates nothing."""
    key, afile = os.path.join(scratch, "open.key"), os.path.join(scratch, "a-file")
    state = os.path.join(scratch, "state-not-created")
    run([gcdp, "ctl", "keygen", "--out", key])
    os.chmod(key, 0o644)
    open(afile, "w").close()
    base = {"PATH": "/usr/bin:/bin", "GCDP_BROKER__BOOTSTRAP": "kafka:9092",
            "GCDP_STATE__DIR": state}
    rel, ing = ["release", "--serve", "--check"], ["ingest", "--check"]
    cases = [
        (rel, {"GCDP_CONTROL__KEY_FILE": key}, "control.key_file"),
        (["calibrate", "--serve", "--check", "-i", afile], {}, "--input"),
        (rel + ["--theta", afile], {}, "--theta"),
        (rel, {"GCDP_STATE__DIR": os.path.join(afile, "state")}, "release.ledger.path"),
        (ing, {"GCDP_KAFKA__SECURITY__PROTOCOL": "bogus"}, "security.protocol"),
        (ing, {"GCDP_METRICS__PORT": "9464", "GCDP_METRICS__BIND": "localhost"}, "metrics.bind"),
        (ing, {"GCDP_INGEST__WINDOW__SIZE_MS": "0"}, "ingest.window.size_ms"),
        (["ingest", "--check"], {"GCDP_BROKER__BOOTSTRAP": "kafka"}, "broker.bootstrap"),
    ]
    bad = 0
    for argv, extra, name in cases:
        rc, out, err = run([gcdp] + argv, env=dict(base, **extra), cwd=scratch)
        if rc != 2 or name not in err or "configuration ok" in out:
            fail("`gcdp %s` with %s: exit %d, stderr %r; want 2 naming %s" %
                 (" ".join(argv), extra, rc, err.strip(), name))
            bad += 1
    # An existing ledger binds its unit scheme and caps (an empty offline release makes one).
    ledger, empty = os.path.join(scratch, "bound.jsonl"), os.path.join(scratch, "empty.jsonl")
    theta = os.path.join(scratch, "theta.json")
    open(empty, "w").close()
    env = dict(base, GCDP_RELEASE__LEDGER__PATH=ledger)
    made = run([gcdp, "calibrate", "-i", data_file, "-f", "occupancy", "-o", theta], env=env)[0]
    made = made or run([gcdp, "release", "--theta", theta, "--input", empty, "--output",
                        os.path.join(scratch, "out.jsonl")], env=env)[0]
    for extra, want in (({}, 0), ({"GCDP_RELEASE__LEDGER__SLOT_MS": "120000"}, 2),
                        ({"GCDP_RELEASE__LEDGER__CAP_EPS": "5"}, 2)):
        rc, out, err = run([gcdp] + rel, env=dict(env, **extra), cwd=scratch)
        if made or rc != want or (want and "release.ledger.path" not in err):
            fail("`gcdp release --serve --check` on a ledger bound to the defaults with %s: "
                 "exit %d %r, want %d" % (extra, rc, err.strip(), want))
            bad += 1
    rc, out, err = run([gcdp] + rel, env=base, cwd=scratch)
    if rc != 0 or os.path.exists(state):
        fail("`gcdp release --serve --check` with a state.dir to be created: exit %d %r, "
             "created: %s" % (rc, err.strip(), os.path.exists(state)))
        bad += 1
    if not bad:
        ok("--check refuses %d bad settings with exit 2 naming them, and a ledger bound to "
           "another slot_ms or cap; accepts the ledger's own; creates no state.dir" % len(cases))


class Health(http.server.BaseHTTPRequestHandler):
    code = 200

    def do_GET(self):
        body = b"ok\n" if Health.code == 200 else b"broker unreachable\n"
        self.send_response(Health.code if self.path == "/healthz" else 404)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def check_healthcheck(gcdp):
    srv = http.server.HTTPServer(("127.0.0.1", 0), Health)
    port = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    env = dict(os.environ, GCDP_METRICS__PORT=str(port))
    got = []
    for code in (200, 503):
        Health.code = code
        got.append(run([gcdp, "healthcheck"], env=env)[0])
    srv.shutdown()
    srv.server_close()
    got.append(run([gcdp, "healthcheck", "--port", str(port), "--timeout", "1"])[0])
    if got != [0, 1, 1]:
        fail("gcdp healthcheck: exit statuses for 200 / 503 / refused: %s, want [0, 1, 1]" % got)
    else:
        ok("gcdp healthcheck: 200 -> 0, 503 -> 1, refused -> 1")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--gcdp", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    if not shutil.which("docker-compose"):
        print("FAIL: docker-compose is not installed (ops/install-deps.sh installs it)")
        return 1
    cfg = compose_config(a.source)
    stages = dockerfile_stages(a.source)
    check_dockerfile(a.source, stages, a.gcdp)
    if cfg:
        check_kafka(cfg)
        with tempfile.TemporaryDirectory(prefix="gcdp-deploy-") as scratch:
            topics = check_services(cfg, stages, a.gcdp, a.data, scratch)
            check_refusals(a.gcdp, scratch, os.path.join(a.data, "occupancy", "datatest.txt"))
        check_topics(a.source, topics)
    check_healthcheck(a.gcdp)
    print("%d failure(s)" % len(FAIL))
    return 1 if FAIL else 0


if __name__ == "__main__":
    sys.exit(main())
