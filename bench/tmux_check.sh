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

# burst KEY...: every key in one write, as a stall under load delivers them (issue 34).
burst() {
    tmux send-keys -t "$SESSION" "$@"
    sleep 1
}

# running NAME: the TUI is still running (the pane's process has not exited).
running() {
    if [ "$(tmux list-panes -t "$SESSION" -F '#{pane_dead}' 2>/dev/null)" = 0 ]; then
        echo "ok   $1: still running"
    else
        echo "FAIL $1: the TUI exited"
        tmux capture-pane -p -t "$SESSION" 2>/dev/null || true
        failed=1
    fi
}

# absent TEXT NAME: TEXT is not on the screen (a dialog that must not have opened).
absent() {
    tmux capture-pane -p -t "$SESSION" >"$CW_CHECK_DIR/$2.txt"
    if grep -qF -- "$1" "$CW_CHECK_DIR/$2.txt"; then
        echo "FAIL $2: '$1' is on the screen:"
        cat "$CW_CHECK_DIR/$2.txt"
        failed=1
    else
        echo "ok   $2: no '$1'"
    fi
}

# superseded: how many documents of the demo archive are superseded (the TUI must be closed:
# CW_EMBEDDED holds the store).
superseded() {
    "$CW" search "queue" --json --limit 50 | python3 -c \
        'import json, sys; print(len(json.load(sys.stdin)["results"]))'
}
before="$(superseded)"

for size in 80x24 160x45; do
    cols=${size%x*}
    rows=${size#*x}
    # remain-on-exit: a TUI that crashed leaves its pane (dead) to be seen, not a gone session.
    tmux new-session -d -s "$SESSION" -x "$cols" -y "$rows" "$CW tui"
    tmux set-option -t "$SESSION" remain-on-exit on
    wait_for "Session" "$size-sessions"
    wait_for "^q Quit" "$size-footer"                     # the footer lists quit (^q here)
    # Issue 34: `i Enter Enter` in one burst popped the base screen (ScreenStackError). `i` is
    # typed into the text match now; ctrl+g opens the id prompt, and Enter Enter closes it once.
    burst i Enter Enter
    running "$size-burst-i-enter-enter"
    wait_for "Session" "$size-after-burst"
    burst F7 C-g Enter Enter
    running "$size-burst-prompt"
    # The Enters of the burst that opened it were typed before it showed: not its.
    wait_for "Open a session" "$size-prompt-kept"
    burst Enter Enter
    running "$size-burst-prompt-enter-enter"
    absent "Open a session" "$size-prompt-closed"
    keys F7
    wait_for "Session" "$size-cleared"
    keys Enter
    wait_for "resume:" "$size-transcript"
    keys / "RocksDB" Enter
    wait_for "matches" "$size-find"                       # find: "1 / N matches"
    keys Escape Escape
    # alt+2 as a terminal that sends Meta as an Esc prefix delivers it: Esc and 2 in one write
    # (Textual reads it as ™, the macOS Option character; the screens bind that too).
    tmux send-keys -t "$SESSION" -H 1b 32
    sleep 0.3
    wait_for "F2" "$size-search"
    keys "queue SQLite role:user" Enter
    wait_for "results" "$size-search-results"
    keys F6
    wait_for "context ±1" "$size-search-context"
    keys Enter
    wait_for "RESOLVED" "$size-recall"
    keys Escape C-o
    wait_for "Transcript" "$size-open-hit"
    keys Escape
    # Issue 34: after Enter, the next query typed into the result list opened Supersede on `x`
    # and three Enters retired the document. Typing goes to the query bar now (back from the
    # transcript, the result list has the focus).
    burst x "new query"
    wait_for "xnew query" "$size-typed-query"
    keys Escape Escape
    keys "queue SQLite role:user" Enter
    wait_for "results" "$size-results-again"
    burst x "new query" Enter Enter Enter
    running "$size-typed-into-results"
    absent "Supersede t-" "$size-no-supersede"
    tmux send-keys -t "$SESSION" -H 1b 33
    sleep 0.3
    wait_for "Generation" "$size-index"
    keys p
    wait_for "Documents behind PARTIAL" "$size-partial"
    keys Escape q
    sleep 1
    tmux kill-session -t "$SESSION" 2>/dev/null || true
done

after="$(superseded)"
if [ "$before" = "$after" ]; then
    echo "ok   nothing retired: $after results for 'queue' before and after"
else
    echo "FAIL a document was retired: $before results for 'queue' before, $after after"
    failed=1
fi

[ "${KEEP:-}" = 1 ] && echo "captures: $CW_CHECK_DIR"
if [ $failed -ne 0 ]; then
    echo "tmux check FAILED"
    exit 1
fi
echo "tmux check passed"
