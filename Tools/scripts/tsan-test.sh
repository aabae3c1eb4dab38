#!/usr/bin/env bash
# One package's tests under ThreadSanitizer: tsan-test.sh PACKAGE_PATH SCRATCH_PATH [swift test flags].
# ThreadSanitizer writes its reports to files here (log_path) rather than among the tests' lines;
# any report (the test process's own, or a child process's: the Reliability suite's crash workers)
# fails the run, and the reports are printed after everything else, so the end of a log (often
# all that a CI run keeps) shows what was found, with both stacks.
set -uo pipefail
pkg="$1"
scratch="$2"
shift 2
reports="$(mktemp -d "${TMPDIR:-/tmp}/tsan-reports.XXXXXX")"
TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}log_path=$reports/report" \
  "${SWIFT:-swift}" test --package-path "$pkg" --sanitize=thread --scratch-path "$scratch" "$@"
rc=$?
if compgen -G "$reports/report.*" >/dev/null; then
  echo "== ThreadSanitizer's reports ($pkg):"
  cat "$reports"/report.*
  # Then each report in short (a CI log may keep only its last lines): what raced, the first
  # frames of each access, and ThreadSanitizer's summary line.
  echo "== ThreadSanitizer's reports in short ($pkg):"
  awk '/WARNING: ThreadSanitizer|^SUMMARY:/ { print; next }
       /^  [A-Z]/ && !/^  Thread / { print; frames = 4; next }
       frames > 0 && /^ +#[0-9]/ { sub(/ \(BuildId: [0-9a-f]+\)/, ""); print; frames--; next }
       { frames = 0 }' "$reports"/report.* | { "${SWIFT:-swift}" demangle --simplified 2>/dev/null || cat; }
  # A report fails the run even when every test passed (a child process's report, such as a
  # crash worker's, never reaches the test's own exit status).
  if [ "$rc" -eq 0 ]; then rc=1; fi
fi
rm -rf "$reports"
exit "$rc"
