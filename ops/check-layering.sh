#!/bin/sh
# Pure algorithm code (<stage>/src/alg/) must not touch I/O, the event loop, Kafka, the clock
# or the process (STYLE P9); product code never uses rand()/random() (DESIGN §7.6).
# Run from the repository root.
set -eu
status=0
files=$(find core ingest sim calibrate release learner pipeline eval -path '*/src/alg/*.[ch]' 2>/dev/null || true)
if [ -n "$files" ]; then
  if grep -HnE '#include <(uv\.h|librdkafka/|microhttpd\.h|unistd\.h|pthread\.h)' $files; then
    echo "layering: I/O header included from pure algorithm code" >&2; status=1
  fi
  # Comment lines (starting with /* or *) are prose, not calls.
  if grep -HnE '(^|[^_a-z])(printf|fprintf|puts|fopen|exit|abort|srand|time|clock_gettime)\s*\(' $files |
     grep -vE '^[^:]+:[0-9]+:\s*(/\*|\*)'; then
    echo "layering: side effect in pure algorithm code (inject it instead)" >&2; status=1
  fi
fi
# The architecture's "never" rules (DESIGN.md): core includes no stage; ingest, sim,
# calibrate and learner include no other stage; release reads only calibrate's theta header;
# pipeline (`gcdp run`'s orchestration) uses the stages but not eval, and no stage or eval
# includes pipeline. (eval, the evaluation harness, and app, the wiring, may use every stage.)
never() { # <dir> <allowed include prefixes, as an ERE alternation>
  hits=$(grep -rHnE '#include "(core|ing|sim|cal|rel|lrn|eval|pipe)/' "$1/src" "$1/include" 2>/dev/null |
         grep -vE "#include \"($2)" || true)
  if [ -n "$hits" ]; then
    echo "$hits"
    echo "layering: $1 includes a header of a stage it must never depend on" >&2; status=1
  fi
}
never core 'core/'
never ingest 'core/|ing/'
never sim 'core/|sim/'
never calibrate 'core/|cal/'
never learner 'core/|lrn/'
never release 'core/|rel/|cal/theta\.h"'
never pipeline 'core/|ing/|sim/|cal/|rel/|lrn/|pipe/'
never eval 'core/|ing/|sim/|cal/|rel/|lrn/|eval/'
# The command driver (cli/) knows no command: it includes nothing of app/ or bench/.
hits=$(grep -HnE '#include "(app|bench|help_texts|producer_flags|broker_bind)\.h"' cli/*.[ch] || true)
if [ -n "$hits" ]; then
  echo "$hits"
  echo "layering: cli/ (the driver) includes a command's or a benchmark's header" >&2; status=1
fi
prod=$(find core ingest sim calibrate release learner pipeline eval cli app bench -name '*.c' 2>/dev/null || true)
if [ -n "$prod" ] && grep -HnE '(^|[^_a-z])(s?rand|random|drand48)\s*\(' $prod; then
  echo "layering: rand()/random()/drand48() in product code: noise must come from the CSPRNG" >&2
  status=1
fi
exit $status
