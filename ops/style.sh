#!/usr/bin/env bash
# Style gates of the test command (STYLE.md §8), fast and before any test runs:
#   1. banned functions in product code (sprintf, strcpy, strcat, gets, atoi/atol/atoll/atof,
#      strtok, rand/srand, system), with the few reasoned exceptions listed below;
#   2. clang-tidy (.clang-tidy) on every product source in the clang preset's
#      compile_commands.json; readability-function-size is fatal too (60 lines / 60 statements /
#      nesting 4, or a NOLINTNEXTLINE with the reason);
#   3. with --format: clang-format --dry-run --Werror on every .c/.h/.cpp of the product
#      and the tests (.clang-format; the tree was reformatted once on 2 December 2026).
#   ops/style.sh              1 and 2
#   ops/style.sh --format     1, 2 and 3 (what ops/test.sh runs)
#   ops/style.sh --analyzer   2 with clang-analyzer-* as well (slow; by hand)
#   ops/style.sh --fix-format reformat in place, nothing else
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-}"
status=0
src_dirs=(core ingest sim calibrate release learner pipeline eval cli app bench)

# 1. Banned functions (comment lines are prose). Exceptions, each with its reason:
#    eval/src/svc/report.c, eval/src/svc/scaling.c: system() runs gnuplot on the figure script
#    it wrote, in a directory the operator named (quoted); bench/bench_ledger.c: system()
#    removes the benchmark's own temporary directory.
allowed='^(eval/src/svc/(report|scaling)\.c|bench/bench_ledger\.c):[0-9]+:.*system\('
hits=$(grep -rnE '(^|[^_a-zA-Z0-9.>])(sprintf|vsprintf|strcpy|strcat|gets|atoi|atol|atoll|atof|strtok|s?rand|system)\s*\(' \
         "${src_dirs[@]}" --include='*.c' --include='*.h' --include='*.cpp' --exclude-dir=results |
       grep -vE '^[^:]+:[0-9]+:\s*(/\*|\*|//)' | grep -vE "$allowed" || true)
if [ -n "$hits" ]; then
  echo "$hits"
  echo "style: banned function (STYLE.md §8: use snprintf, strtol/strtod with checks, strtok_r, the CSPRNG, posix_spawn)" >&2
  status=1
fi

# 3. Formatting (--format; --fix-format rewrites instead).
mapfile -t fmt_files < <(git ls-files '*.c' '*.h' '*.cpp') # every tracked source
if [ "$mode" = --fix-format ]; then
  clang-format -i "${fmt_files[@]}"
  exit 0
fi
if [ "$mode" = --format ] &&
   ! clang-format --dry-run --Werror "${fmt_files[@]}" 2>/tmp/gcdp-format.$$; then
  grep -E '^[^ ].*: error' /tmp/gcdp-format.$$ | cut -d: -f1 | sort | uniq -c | sort -rn | head -20
  echo "style: clang-format would change the files above (ops/style.sh --fix-format)" >&2
  status=1
fi
rm -f /tmp/gcdp-format.$$

# 2. clang-tidy on the product sources (the clang preset configures compile_commands.json).
cmake --preset clang >/dev/null
extra=()
[ "$mode" = --analyzer ] && extra=(--checks='clang-analyzer-*,-clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling')
mapfile -t tidy_files < <(python3 -c '
import json, os, sys
root = os.getcwd() + "/"
for e in json.load(open("build/clang/compile_commands.json")):
    f = os.path.normpath(os.path.join(e["directory"], e["file"]))
    rel = f[len(root):] if f.startswith(root) else f
    if rel.split("/")[0] in sys.argv[1:] and rel.endswith(".c"):
        print(rel)' "${src_dirs[@]}" | sort -u)
out=/tmp/gcdp-tidy.$$
if ! printf '%s\n' "${tidy_files[@]}" |
     xargs -P "$(nproc)" -n 8 clang-tidy -p build/clang --quiet \
       --warnings-as-errors='*' "${extra[@]}" >"$out" 2>&1; then
  grep -E ': (error|warning):' "$out" | sort -u | sed -E 's|^'"$PWD"'/||'
  echo "style: clang-tidy findings above (.clang-tidy; a function over 60 lines, 60 statements or" \
       "nesting 4 is split, or carries a NOLINTNEXTLINE(readability-function-size) with a comment" \
       "saying why)" >&2
  status=1
fi
rm -f "$out"
exit $status
