#!/bin/sh
# The TUI in a real terminal (tmux), at 80×24 and 160×45, over the bundled demo archive: each
# step sends keys as a person would, captures the screen and checks that what must be there is
# there. Exit 0 when every check passed; on a failure it prints the screen it saw.
#
#   sh bench/tmux_check.sh            # from the repository root, after `make install`
#   KEEP=1 sh bench/tmux_check.sh     # leave the captures in $CW_CHECK_DIR (printed at the end)
set -eu

CW="${CW:-$(pwd)/.venv/bin/cw}"
command -v tmux >/dev/null || { echo "tmux is not installed (apt-get install tmux)"; exit 2; }
[ -x "$CW" ] || { echo "no $CW: run make install first"; exit 2; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/cw-tmux-check.XXXXXX")"
CW_CHECK_DIR="$WORK/captures"
mkdir -p "$CW_CHECK_DIR"
export CW_HOME="$WORK/home" CW_EMBEDDED=1 CW_NOW=2026-11-20T12:00:00Z
SESSION="cw-check-$$"
failed=0

cleanup() {
    tmux kill-session -t "$SESSION" 2>/dev/null || true
    [ "${KEEP:-}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT

"$CW" import cwcore/demo >/dev/null

# wait_for TEXT NAME: capture until TEXT shows (up to 15 s), save the capture as NAME.
wait_for() {
    i=0
    while [ $i -lt 60 ]; do
        tmux capture-pane -p -t "$SESSION" >"$CW_CHECK_DIR/$2.txt"
        if grep -qF -- "$1" "$CW_CHECK_DIR/$2.txt"; then
            echo "ok   $2: $1"
            return 0
        fi
        i=$((i + 1))
        sleep 0.25
    done
    echo "FAIL $2: no '$1' on the screen:"
    cat "$CW_CHECK_DIR/$2.txt"
    failed=1
    return 0
}

# keys KEY...: one key (or literal text) at a time, a beat apart: two Escapes sent together read
# as one Alt sequence to a terminal.
keys() {
    for key in "$@"; do
        tmux send-keys -t "$SESSION" "$key"
        sleep 0.3
    done
}

for size in 80x24 160x45; do
    cols=${size%x*}
    rows=${size#*x}
    tmux new-session -d -s "$SESSION" -x "$cols" -y "$rows" "$CW tui"
    wait_for "Session" "$size-sessions"
    wait_for "q ^q Quit" "$size-footer"                   # the footer lists quit (and ^q)
    keys Enter
    wait_for "resume:" "$size-transcript"
    keys / "RocksDB" Enter
    wait_for "matches" "$size-find"                       # find: "1 / N matches"
    keys Escape Escape
    keys 2
    wait_for "F2" "$size-search"
    keys "queue SQLite role:user" Enter
    wait_for "results" "$size-search-results"
    keys F6
    wait_for "context ±1" "$size-search-context"
    keys Enter
    wait_for "RESOLVED" "$size-recall"
    keys Escape o
    wait_for "Transcript" "$size-open-hit"
    keys Escape 3
    wait_for "Generation" "$size-index"
    keys p
    wait_for "Documents behind PARTIAL" "$size-partial"
    keys Escape q
    sleep 1
    tmux kill-session -t "$SESSION" 2>/dev/null || true
done

[ "${KEEP:-}" = 1 ] && echo "captures: $CW_CHECK_DIR"
if [ $failed -ne 0 ]; then
    echo "tmux check FAILED"
    exit 1
fi
echo "tmux check passed"
