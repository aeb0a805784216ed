#!/usr/bin/env bash
# Runs `swift test "$@"` under a time limit (CALLVEIL_TEST_TIMEOUT, default 40m: the suite takes a few minutes
# after its build), so a test that hangs fails the run with its name instead of stalling CI. swift-testing's
# event stream is written as the run goes (the console output is buffered and lost when the run is killed); on
# a timeout the tests that started and never ended are listed from it.
set -uo pipefail
limit=${CALLVEIL_TEST_TIMEOUT:-40m}
events=$(mktemp /tmp/callveil-test-events.XXXXXX)
trap 'rm -f "$events"' EXIT
timeout --kill-after=30s "$limit" swift test --event-stream-output-path "$events" --event-stream-version 0 "$@"
rc=$?
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
  echo "swift test did not finish within $limit; tests that started and never ended:"
  python3 - "$events" <<'PY'
import json, sys
started, ended = {}, set()
for line in open(sys.argv[1], errors="replace"):
    try:
        record = json.loads(line)
    except ValueError:
        continue
    payload = record.get("payload", {})
    if record.get("kind") != "event" or "testID" not in payload:
        continue
    if payload["kind"] == "testStarted":
        started[payload["testID"]] = payload["messages"][0]["text"] if payload.get("messages") else payload["testID"]
    elif payload["kind"] in ("testEnded", "testSkipped"):
        ended.add(payload["testID"])
for test, text in started.items():
    if test not in ended:
        print("  " + text)
PY
fi
exit "$rc"
