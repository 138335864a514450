#!/usr/bin/env bash
# Regenerates every committed report under reports/ with the commands that made them.
# Slow parts (the mutation table, the Hangar runs) can be skipped:
#   scripts/regenerate-reports.sh [--skip-mutants] [--skip-hangar] [--skip-bench] [--skip-gateways]
#                                 [--skip-official] [--with-bench]
# (--skip-gateways: the supergateway, mcp-proxy, FastMCP, npm mcp-proxy and MCP Hub runs,
# installed on first use;
# --skip-official: the official suite's runs and its table beside relaycheck, whose reports are
# then only rendered again from their committed results.)
# --with-bench also runs `relaycheck bench suite|scaling|stream|retention` (a few minutes on 2
# cores)
# with the commands reports/benchmarks.md names, into reports/bench-modes/; the figures in
# reports/benchmarks.md are copied from those files by hand, with the load they ran at.
set -euo pipefail
cd "$(dirname "$0")/.."
skip_mutants=false; skip_hangar=false; skip_bench=false; skip_gateways=false; skip_official=false
with_bench=false
for arg in "$@"; do
  case "$arg" in
    --skip-mutants) skip_mutants=true ;;
    --skip-hangar) skip_hangar=true ;;
    --skip-bench) skip_bench=true ;;
    --skip-gateways) skip_gateways=true ;;
    --skip-official) skip_official=true ;;
    --with-bench) with_bench=true ;;
    *) echo "unknown option $arg" >&2; exit 2 ;;
  esac
done
cargo build --release -p relaycheck
rc=target/release/relaycheck

$rc catalogue --out reports/catalogue.md --conformance-out docs/conformance.md
# A run whose results fail exits 1; that is its report, not an error of this script.
# The controls run every shape, the proposals included; real gateways run the released ones.
$rc run --target direct --shape all --shape proposals --out reports/direct || true
$rc run --target direct --shape sep-3279 --forced --out reports/direct-forced-sep-3279 || true
$rc run --target reference --shape all --shape proposals --out reports/reference || true
# The same controls over HTTP (streamable, and the legacy HTTP+SSE transport for the control),
# where the cases a stdio front cannot carry (HTTP headers, the two 400 refusals, the
# authorization context of caches and tasks) show their passes.
$rc run --target direct-http --shape all --shape proposals --out reports/direct-http || true
$rc run --target direct-sse --shape all --shape proposals --out reports/direct-sse || true
$rc run --target reference-http --shape all --shape proposals --out reports/reference-http || true
$rc run --target reference --shape sep-3279 --forced --out reports/reference-forced-sep-3279 || true
# The reference's bridge: a 2026-07-28 caller in front of an upstream that speaks only SEP-3279.
$rc run --target reference --shape sep-3279 --north 2026-07-28 \
  --out reports/reference-north-2026-07-28-south-sep-3279 || true
$rc compare reports/reference/results.jsonl reports/reference-north-2026-07-28-south-sep-3279/results.jsonl \
  > reports/compare-reference-negotiated-vs-bridged-sep-3279.md
$rc compare reports/direct/results.jsonl reports/direct-forced-sep-3279/results.jsonl \
  > reports/compare-direct-negotiated-vs-forced-sep-3279.md
$rc compare reports/reference/results.jsonl reports/reference-forced-sep-3279/results.jsonl \
  > reports/compare-reference-negotiated-vs-forced-sep-3279.md
if ! $skip_hangar; then
  $rc run --target harness/targets/hangar.toml --shape all \
    --expected-failures reports/hangar-2.34.4/expected-failures.yaml --out reports/hangar-2.34.4 || true
  $rc run --target harness/targets/hangar-front-door.toml --shape all \
    --expected-failures reports/hangar-2.34.4-front-door/expected-failures.yaml \
    --out reports/hangar-2.34.4-front-door || true
  $rc run --target harness/targets/hangar-truncator-wired.toml --case 'response-mutators/*' \
    --shape all --expected-failures reports/hangar-2.34.4-truncator-wired/expected-failures.yaml \
    --out reports/hangar-2.34.4-truncator-wired || true
  $rc compare reports/reference/results.jsonl reports/hangar-2.34.4-front-door/results.jsonl \
    > reports/compare-reference-vs-hangar-front-door.md
fi
if ! $skip_gateways; then
  # Published real gateways, each against its baseline.
  mkdir -p target/published
  git show HEAD:reports/supergateway-4.0.0/results.jsonl > target/published/supergateway-4.0.0.jsonl
  $rc run --target harness/targets/supergateway.toml --shape all \
    --expected-failures reports/supergateway-4.0.0/expected-failures.yaml \
    --out reports/supergateway-4.0.0 || true
  # What a pull request that regenerates the reports would be told (docs/ci/).
  $rc compare target/published/supergateway-4.0.0.jsonl reports/supergateway-4.0.0/results.jsonl \
    --format markdown > reports/compare-supergateway-4.0.0-published-vs-regenerated.md
  $rc run --target harness/targets/mcp-proxy.toml --shape all \
    --expected-failures reports/mcp-proxy-0.13.0/expected-failures.yaml \
    --out reports/mcp-proxy-0.13.0 || true
  $rc run --target harness/targets/fastmcp-proxy.toml --shape all \
    --expected-failures reports/fastmcp-4.2.3/expected-failures.yaml \
    --out reports/fastmcp-4.2.3 || true
  # Two gateways profiled as a newcomer would (init-target, smoke, the defaults): not in CI,
  # where one of them (the hub) fails its first calls now and then while it registers tools.
  $rc run --target harness/targets/mcp-proxy-npm.toml --shape all \
    --expected-failures reports/mcp-proxy-npm-6.7.19/expected-failures.yaml \
    --out reports/mcp-proxy-npm-6.7.19 || true
  $rc run --target harness/targets/mcp-hub.toml --shape all \
    --expected-failures reports/mcp-hub-4.2.1/expected-failures.yaml \
    --out reports/mcp-hub-4.2.1 || true
fi
# The reference negotiated, forced and bridged, so the matrix sets the three side by side.
runs=(reports/direct/results.jsonl reports/reference/results.jsonl
  reports/reference-forced-sep-3279/results.jsonl
  reports/reference-north-2026-07-28-south-sep-3279/results.jsonl)
for r in reports/hangar-2.34.4/results.jsonl reports/hangar-2.34.4-front-door/results.jsonl \
  reports/supergateway-4.0.0/results.jsonl reports/mcp-proxy-0.13.0/results.jsonl \
  reports/fastmcp-4.2.3/results.jsonl reports/mcp-proxy-npm-6.7.19/results.jsonl \
  reports/mcp-hub-4.2.1/results.jsonl; do
  [ -f "$r" ] && runs+=("$r")
done
$rc matrix "${runs[@]}" > reports/matrix.md
# The site: every published run (its history.jsonl keeps the runs before), checked in headless
# Chromium, with the screenshots reports/README.md shows.
$rc site --out reports/site reports/*/results.jsonl
[ -d harness/tests/browser/node_modules ] || npm ci --prefix harness/tests/browser
mkdir -p reports/screenshots
node harness/tests/browser/site-check.mjs reports/site reports/screenshots \
  targets/supergateway-4.0.0.html
# What a run costs against each hostile target of the zoo, and what a signal leaves behind.
python3 scripts/hostile-table.py "$rc"
if ! $skip_mutants; then
  $rc mutants --target reference-http --shape 2025-11-25 --shape 2026-07-28 --shape sep-2200 \
    --shape sep-3279 --bridges \
    --out reports/reference/mutants.md || true
fi
if $skip_official; then
  # The committed official runs, rendered again by today's code (no new runs).
  RELAYCHECK_RENDER_PUBLISHED=write cargo test -q -p relaycheck --test published >/dev/null || true
else
  # The official MCP conformance suite (pinned; installed on first use) against the controls,
  # and side by side with relaycheck on every mutant (relaycheck's side per mutant read from
  # reports/reference/mutants.json, so it follows the mutation table above).
  $rc official --target direct-http \
    --expected-failures reports/official/direct-http/expected-failures.yaml \
    --out reports/official/direct-http || true
  $rc official --target reference-http \
    --expected-failures reports/official/reference-http/expected-failures.yaml \
    --out reports/official/reference-http || true
  # The stdio controls, through the bridge (streamable HTTP, one target process per session).
  $rc official --target direct \
    --expected-failures reports/official/direct/expected-failures.yaml \
    --out reports/official/direct || true
  $rc official --target reference \
    --expected-failures reports/official/reference/expected-failures.yaml \
    --out reports/official/reference || true
  # The suite's pre-release, its 2025-11-25 and 2026-07-28 requirement sets.
  $rc official --suite-version 0.2.0-alpha.12 --spec-version 2025-11-25 --target reference-http \
    --expected-failures reports/official/alpha-2025-11-25/reference-http/expected-failures.yaml \
    --out reports/official/alpha-2025-11-25/reference-http || true
  for t in direct-http reference-http; do
    $rc official --suite-version 0.2.0-alpha.12 --spec-version 2026-07-28 --target "$t" \
      --expected-failures "reports/official/alpha-2026-07-28/$t/expected-failures.yaml" \
      --out "reports/official/alpha-2026-07-28/$t" || true
  done
  $rc official table --out reports/official-vs-relaycheck.md
fi
if ! $skip_bench; then
  {
    echo "# relaycheck bench"
    echo
    echo "Latency of the same calls made to the canary directly and through each target, alternating"
    echo "call by call in one run (p50/p90/p99 over the measured calls, after one warm-up each)."
    echo "Measured on the 2-core machine this was run on; ratios are the comparable figure."
    echo
    $rc bench --target reference --calls 50
    $skip_hangar || $rc bench --target harness/targets/hangar.toml --calls 20 --size 0 --size 1048576
    if ! $skip_gateways; then
      for profile in supergateway mcp-proxy fastmcp-proxy; do
        $rc bench --target "harness/targets/$profile.toml" --calls 20
      done
    fi
  } > reports/bench-targets.md
fi
if $with_bench; then
  # Timing, not conformance: run these on a quiet machine; a busy one slows every column.
  mkdir -p reports/bench-modes
  $rc bench suite --repeat 3 --out reports/bench-modes/suite.md
  $rc bench scaling --cases-per-size 5 --out reports/bench-modes/scaling.md
  $rc bench stream --repeat 3 --out reports/bench-modes/stream.md
  $rc bench retention --target reference --out reports/bench-modes/retention.md
  $skip_hangar || $rc bench retention --target harness/targets/hangar.toml --calls 400 \
    --size 65536 --out reports/bench-modes/retention-hangar-2.34.4.md
fi
