"""A tiny GTP engine for tests: a real process that misbehaves on purpose.

    python fake_gtp_engine.py MODE [LOGFILE]

Every command line it reads is appended to LOGFILE (if given). Modes:

* ``pass``: a well-behaved engine that always passes.
* ``garbage``: answers ``genmove`` with text that is not GTP.
* ``badvertex``: answers ``genmove`` with ``= Z99``.
* ``resign``: answers ``genmove`` with ``= resign``.
* ``die-once``: exits (status 3) at the first ``genmove`` it ever sees (a marker file next to
  LOGFILE remembers), then behaves like ``pass`` after being restarted.
* ``always-die``: exits at every ``genmove``.
* ``slow``: never answers ``genmove``.
* ``refuse``: answers ``play`` with ``? illegal move``.
* ``chatty``: passes, and writes a kilobyte to stderr at every command.
* ``score=TEXT``: passes, and answers ``final_score`` with TEXT (other modes answer ``0``).
"""

import os
import sys
import time

mode = sys.argv[1]
log = sys.argv[2] if len(sys.argv) > 2 else None


def answer(text: str = "", ok: bool = True) -> None:
    sys.stdout.write(("= " if ok else "? ") + text + "\n\n")
    sys.stdout.flush()


for line in sys.stdin:
    line = line.strip()
    if log:
        with open(log, "a") as handle:
            handle.write(line + "\n")
    if not line:
        continue
    command = line.split()[0]
    if mode == "chatty":
        sys.stderr.write("x" * 1023 + "\n")
        sys.stderr.flush()
    if command == "quit":
        answer()
        break
    if command == "list_commands":
        answer(
            "\n".join(["boardsize", "clear_board", "komi", "play", "genmove", "final_score", "quit", "list_commands"])
        )
    elif command == "final_score":
        answer(mode[len("score=") :] if mode.startswith("score=") else "0")
    elif command == "genmove":
        if mode == "garbage":
            sys.stdout.write("I am not a GTP engine\n\n")
            sys.stdout.flush()
        elif mode == "badvertex":
            answer("Z99")
        elif mode == "resign":
            answer("resign")
        elif mode == "always-die":
            sys.exit(3)
        elif mode == "die-once":
            marker = (log or "fake") + ".died"
            if not os.path.exists(marker):
                open(marker, "w").close()
                sys.exit(3)
            answer("pass")
        elif mode == "slow":
            time.sleep(3600)
        else:
            answer("pass")
    elif command == "play" and mode == "refuse":
        answer("illegal move", ok=False)
    else:
        answer()
