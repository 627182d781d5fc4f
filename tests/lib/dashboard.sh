# dashboard.sh: for the browser tests of the web dashboard (t5120, t5130), sourced after
# test-lib.sh. Their checks are Python scripts driving headless Chromium with Selenium
# (tests/integration/dashboard_lib.py), which print one "ok - NAME" or "not ok - NAME: why"
# line per check and "# checks done" at the end.
DASHBOARD_LIBDIR="$TY_SOURCE_DIR/tests/integration"
# Where screenshots go: $TY_ARTIFACT_DIR (scripts/run-tests.sh keeps them), else the test's
# scratch directory.
DASHBOARD_ART=${TY_ARTIFACT_DIR:-$TEST_DIR/artifacts}
mkdir -p "$DASHBOARD_ART"

# Usage: dashboard_require WHAT   Skip the whole test (TAP skip, exit 0) when Chromium, its
# driver or Selenium is missing, saying which.
dashboard_require() {
  local why
  why=$("$PYTHON" "$DASHBOARD_LIBDIR/dashboard_lib.py" --missing 2>&1)
  if [ -n "$why" ]; then
    test_skip "$1" "missing: $why (scripts/install-deps.sh installs chromium chromium-driver python3-selenium)"
    test_done
  fi
}

# Usage: dashboard_checks PREFIX SCRIPT CONFIG_JSON   Run tests/integration/SCRIPT with
# CONFIG_JSON and make each of its checks a TAP test named "PREFIX: NAME" (its reason shown
# when it failed), then one test that it ran to its end.
dashboard_checks() {
  local prefix=$1 script=$2 i=0 line name
  "$PYTHON" "$DASHBOARD_LIBDIR/$script" "$3" >"$TEST_DIR/checks.out" 2>"$TEST_DIR/checks.err"
  while IFS= read -r line; do
    case $line in
      "ok - "* | "not ok - "*)
        i=$((i + 1)); printf '%s\n' "$line" >"$TEST_DIR/check-$i"
        name=${line#ok - }; name=${name#not ok - }; name=${name%%: *}; name=${name% (*s)}
        test_expect_success "$prefix: $name" "grep -q '^ok - ' check-$i || { cat check-$i; false; }" ;;
      "#"*) printf '%s\n' "$line" ;;
    esac
  done <"$TEST_DIR/checks.out"
  test_expect_success "$script ran every check" '
    grep -q "^# checks done" checks.out || { tail -20 checks.err; false; }
  '
}
