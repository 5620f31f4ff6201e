"""Diff a bad trace against good traces: name the bifurcation point.

``diff_traces(good, bad, expected=None, learn=True) -> DiffReport``

Method
------
1. **Normalise** (baseline.run.normalize): paths/args/thread names masked (pids, fds, addresses,
   numbers, mkstemp-style random tokens, names that vary run to run at the same place --
   learned from the runs themselves -- and search-path walks); each event becomes a token
   ``(probe, errno, normalised path, normalised arg, depth, normalised path2)`` -- never pid,
   fd, ret, time or output bytes --
   packed into one integer from the codes of one shared dictionary per column (good and bad
   are prepared as one table).
2. **Split** every trace into per-thread streams, each named by its *role* (fork-tree path of
   exec'd names, threads as ``~name``), so thread and child-process interleaving is irrelevant.
   A bad process whose role no good run has (a launcher that exited before its final exec)
   takes the role of the good process under the same parent whose names began with its own
   (`_match_by_exec_history`); its threads and children follow.
3. **Transparent events**: an error matching the allowlist (the curated expected_errors.yaml
   plus, with ``learn=True``, every (probe, errno, path, process) error the good runs produced)
   is removed from good and bad streams alike and counted per entry; so are calls of
   timing/allocator/randomness *noise probes* (`NOISE_PROBES`: brk, mmap, futex, rt_sigreturn,
   getrandom, a thread's own exit, poll/select/epoll_wait, ...) that succeed or fail for timing (`TIMING_ERRNOS`:
   futex EAGAIN/ETIMEDOUT under contention) -- any other error on one of those still counts;
   so are successful reads of the kernel's random devices (`RANDOM_DEVICES`: getrandom by
   another door; a JVM's NativePRNG refills from /dev/urandom when its buffer is 100 ms old)
   and successful calls on the files the allocator reads when it first needs them
   (`ALLOCATOR_FILES`: glibc's malloc reads /proc/sys/vm/overcommit_memory as an arena first shrinks);
   so are successful calls on the data files of the run's locale and time zone
   (`ENVIRONMENT_DATA`: message catalogs, the locale archive, zoneinfo: LANG and TZ choose them);
   and getpeername's and shutdown's ENOTCONN (`PEER_GONE_TIMING`: the connection already over when a
   program asked about it or shut it down).
   No entry covers an error at a (call, path) the good runs completed successfully (timing
   errnos aside -- but not ENOTTY, which says what the descriptor is: an ioctl the good runs'
   device answered failing ENOTTY on a node with another driver's numbers; unless the good
   runs failed ENOTTY there too, `_enotty_known_there`: python's isatty of a script). The
   failed attempts of a *retry loop* are transparent too: errors (soft, or ECONNREFUSED) at a
   call site the same thread then gets past there, each attempt within `RETRY_GAP` rows of the
   last, with a wait between (`WAIT_PROBES`: a sleep, a poll) -- a poll for a file, a connect
   while a service starts: how many attempts it took is timing. So is a create failing EEXIST
   whose thread removes that path and creates it again (gzip -f over the last run's output).
   So are the misses of a *probe loop* (`_probe_misses`): a thread trying a numbered family's
   members at one call site (uverbs0, uverbs1, ...: ENOENT/ENOTDIR each; ld.so trying
   LD_LIBRARY_PATH directories l0, l3, l2 -- their hwcaps subdirectories' misses in between
   do not count as a pause, `_gaps_past_misses`) until one answers,
   at a call site where no thread of any run succeeded more than once or called again after
   its success -- which member answers is the host's; a scan that opens every member (shards)
   succeeds many times a thread and keeps its misses, and so does a probe finding none.
   So are the error-free calls on a file created exclusively (O_CREAT|O_EXCL: a lock, a temp)
   that some runs, the bad one among them, renamed over its target and others unlinked
   (`_lock_fates`): whether a program publishes or discards its lock is its own choice.
   An idempotent mkdir (mkdir -p, makedirs(exist_ok=True)) that finds the directory a good
   run created -- mkdir EEXIST, then a successful stat of the path -- is taken for the
   mkdir's success (the stat drops out), unless the thread diverges within a window after
   it (the path was a file): then its EEXIST names that divergence, as an outcome change --
   not when that divergence is error-free, made of events the good runs have, in a run
   exiting as they did (`mkdir -p` ending on a nested directory skips its return to the start
   directory: the manifest's last line, not a failure).
   A directory made on demand -- a create failing ENOENT, the thread's next call a successful
   mkdir of its parent, then the same call succeeding there (`_parents_made_on_demand`: git's
   loose objects in their fan-out directories) -- is one create, as in a run that found the
   directory: the failed create and the mkdir drop out. So does an input stream given back at
   exit on a pipe -- lseek ESPIPE as a thread's last call before its exit
   (`_exit_time_stream_syncs`): whether stdio's read-ahead held unread data is the writer's timing.
   So does a cache miss its thread fills -- an open ENOENT at a path the thread then renames a
   file onto or creates, within `CACHE_FILL_ROWS` rows, at a call site no good run opened
   (`_cache_misses_filled`: python's bytecode cache of the module it imports): which cache a
   run misses follows what it loads. A cache the good runs found warm, missed here (an
   existence check or an open failing ENOENT) and published again by a rename onto it within
   those rows (`_warm_caches_refilled`), drops out with its fill: warm in some runs, cold in
   others -- also when the fill is made by processes the missing one starts (a shell script's
   mkdir -p, sha256sum, mv: `_warm_caches_refilled_by_children`, their soft errors with them);
   a fill that fails hard in the cache's directory is named by that error, not by the miss.
   So does a writer's rotation of its own file (`_rotations`: close, backups shifted,
   the file renamed aside to a longer name and created again): how many times a log rotates
   on size is how much the run wrote. A wait for one child failing ECHILD because the
   process's own SIGCHLD handler had reaped every child first (`_reaped_by_own_reaper`) is
   taken for that wait's success, the handler's reaping wait dropping out: which of the two
   reaps it is the child's timing.
4. **Loop compression** (DiffTrace): repeated n-grams (n <= 4) collapse, so iteration counts
   do not matter; a virtual END token closes every stream.
5. **Model** (stide): the set of length-k windows (default k=4) of every good stream, keyed by
   role. A bad position is *explained* when its window occurs in some good stream of the same
   role (a bad role no good run has falls back to a good role with the same process name).
   Several good runs with different branches are therefore all explained.
6. **Regions**: maximal runs of unexplained bad positions (runs < k apart merged). Each region
   is one finding; its *event* is its most severe unexpected error, else its first
   unexplained event (an inserted call, a different path, a different syscall, or END: the
   thread stopped early).
7. **Alignment for context**: ``last_common`` are the bad events just before the region (all
   explained); the bad stream is re-anchored in the best good stream at the last window they
   share (closest relative position), and ``good_instead`` are the good events that followed.

Cost (bench/bench_diff.py: two traces of 1,000,000 events)
-----------------------------------------------------------
Only the needed columns are read, one at a time as they are converted (`EventColumns`: the
whole table never exists as Arrow), and not at all when the Parquet footer's statistics say
what they hold (all null; one trace id, kind or command); strings stay Arrow dictionary codes
(tracer.schema writes paths dictionary-encoded however many there are), regexes run once per
distinct value (digit runs in numpy, RE2 only where a rule needs it), everything per event is
a few vectorised numpy passes over int16/int32/uint64 arrays (stream order by a stable integer
argsort; values constant within a thread stored once per stream and the normalised path
through the raw path code, see `Prepared`; tokens packed for the kept rows a field at a time;
window hashes and the model lookup a block at a time; membership by sort-merge, binary search
or lookup table; call keys only for the rows asked about), big intermediates are handed over
and released as soon as they are consumed, and neither polars nor pandas is loaded by the CLI
(pyarrow would import pandas on its first conversion: see baseline.cli.diff). Figures:
docs/benchmarks.md.

Ranking (the documented rule)
-----------------------------
``score = severity + (3.5 if an outcome change at a call site the good runs share) + (1.5 if
the thread never re-joins known-good behaviour else 0)``. An outcome change is an error at a
(syscall, normalised path) the good runs also call, with another outcome there (success, or
another errno): it outranks novelty (a path, call or error no good run had). Severity is
severity 4 for an unexpected *hard* error (EACCES, EROFS, ENOSPC, EMFILE, ELOOP, EIO, ...),
2 for an unexpected *soft* error (`SOFT_ERRNOS`: ENOENT, ENOTDIR, EAGAIN, EINTR, ENOTTY,
EEXIST, ... -- the errnos programs routinely probe with), 1 for an error-free divergence.
Ties go to the earliest event. So an injected EACCES outranks a routine-looking ENOENT the
good runs happened not to show, and an error-free divergence the run never recovers from
(corrupt input sending the program down another path) outranks a soft error it recovered
from. A region with no error, made only of events the good runs also have (for that role),
that re-joins good behaviour is a **reordering** (timing: signal delivery, scheduling): it is
listed under ``reorderings`` with score 0.5 and does not make ``anomaly`` true; so is such a
region reaching the end of its thread when the thread -- or all the bad run's threads of its
role together (a thread pool shares its work differently each run) -- did every kind of event
a good thread (a good run's threads of that role) did: the same work in another order (a
set's order under a per-run hash seed), not a thread stopping early. So is a thread pool's
region (a role some good run has two threads of) in a run exiting as the good runs did, whose
only errors some good run met at that call (or recorded path) with that errno and with no
other new event, re-joining or reaching its thread's end: which worker takes which task is the
scheduler's (npm reading its config layers on libuv's pool, one layer absent here and in one
good run, on another worker there). So is a region with no
error that re-joins good behaviour and whose only new events are successes at call sites
where every good run failed with a soft error, when without them the thread did what the good
runs did and nothing else in the run is anomalous (rm -f finding a file an earlier run left;
not a stale done-marker making a job skip its work). So is an error-free region whose thread,
once its sleeps (and the good runs' of its role) are left out, did only what the good runs
did, in a run exiting as they did (`_only_slept`: HotSpot's VM Thread sleeping 1 ms at a time
while threads reach a safepoint, as often as the machine was slow, or not at all), or did,
once more, a step of calls some good stream made in that order on another thread
(`_known_step_elsewhere`: the VM Thread recounting the CPUs as the GC adds a worker). Three
refinements:

* an error at the *raw* path (before masking) where the good runs succeeded, and never failed
  so, is an outcome change even when masking and loop compression explain its window (shard
  00002 missing where the good runs' scan ends with ENOENT at shard 00005);
* a *fallback lookup* -- a soft error where the good runs succeeded, answered by the very next
  event of the thread, the same call succeeding on a path no good run took (the XDG config
  missing, the dotfile found) -- neither names nor scores its region;
* an error the good runs of its role made too, at that call and path with that errno (no
  novelty, no outcome change), does not name a region that opens with a new error-free event
  (`_known_errors_after_new`): it is the program's ordinary flow going on inside the new
  event's window (sqlite3's 'UNIQUE constraint failed' message mid-load, then the next
  statement's hot-journal check, ENOENT there as in every good run);
* an error saying the other end went away or is not there (`PEER_ERRNOS`: EPIPE, ECONNRESET,
  ECONNREFUSED, ...) is a consequence when another process of the bad run failed -- without
  recovering, or with a hard error at a call the good runs completed or at a call without a
  path (accept EMFILE: call sites are keyed by path), or with a soft error at a call the good
  runs completed right before its thread ended (grep -f exiting 2 on a missing pattern file,
  its exit re-joining the good runs') -- before the error's
  region ended: it scores as a soft error without the outcome-change bonus (a writer's
  blocked write returns EPIPE after the reader died, yet entered before the reader's error);
* an error-free divergence of a process right after it reaped a child (a successful wait4 or
  waitid among the k events before it), when a region with an error in a process it made (a
  descendant) began before and ended within k events of that thread's end (no work done after
  the error), is that child's failure's consequence (`_after_failed_child`):
  it scores just below the child's error (``sh -e`` exiting instead of its next command after
  ``renice -p`` of an exited pid failed ESRCH -- a soft error at a call without a path, so no
  outcome-change bonus, where the shell's exit never re-joins: 2.5 over 2.0);
* a message catalog not found (`MESSAGE_CATALOG`: gettext's LC_MESSAGES/*.mo ENOENT, looked
  up to translate a message about to be printed) does not name its region unless it is an
  outcome change; a region that opens with one is named by the error of the thread's call
  right before it (`_reported_error`, the message's own writes passed over), even one the
  good runs met too and got past (cp --reflink=always: FICLONE's EOPNOTSUPP); so is a region
  named by an error-free event whose thread goes on to such a lookup in a run exiting with
  another status, even by an ENOTTY (stty -F on a path that is no terminal: the isatty
  entry makes its TCGETS routine elsewhere);
* an error an allowlist glob set aside at a call site no good run has (its (call, path) is
  none of theirs: the curated `/sys/class/infiniband/**` entry meant for libibverbs' optional
  attributes also covers the port state of an HCA a config names and this host lacks), right
  before the message of a run exiting with another status, names the region that message
  opens (`_allowlisted_cause`), and so does one of a call without a path that no good process
  of its name failed with that errno (prctl EINVAL: an ambient capability this kernel does not
  know, where the entry is for libcap's probe), or failed so fewer times than the bad one (a
  call without a path has no call site to tell the routine failures from the new one: three
  optional interfaces missing in every run, SIOCGIFINDEX ENODEV, and the required one in the
  bad run; SO_RCVBUFFORCE refused before its fallback, then SO_PRIORITY 7 refused) -- with the
  failed call's clean-up between it and the message passed over (glibc's if_nametoindex
  closes its socket), and the region then no reordering of known events; a routine miss the
  good runs make too at that call site (the
  optional counters probed before a port found DOWN is reported) does not;
* of a region's equally heavy errors, the first one names it unless the run's last message (a
  run exiting with another status) reports a later one at another path, not under the first's,
  with nothing written between the two (`_silent_before_reported`): the earlier error was
  passed over in silence (zstd --rm of another account's log: chown EPERM twice copying the
  owner to the .zst, ignored; then unlink EPERM, reported). A directory that could not be
  made, then a file in it, keeps the directory;
* a *recovered fallback* (`_recovered_fallbacks`) -- in a run exiting as the good runs did, a
  region whose only error is a call no good run of the role saw fail so, after which the thread
  gives the call's role to another means (the same call on the same path succeeding: a queue
  joined after O_EXCL's EEXIST; or a call of its curated family in fallback_calls.yaml, on its
  paths: epoll after io_uring_setup EPERM, read/write after copy_file_range EXDEV), releases
  descriptors, does what the good runs do and nothing else new, writes no more messages than a
  good run's thread, and re-joins good behaviour (or ends with its own exit after known events)
  -- is the same work by another route: listed with the reorderings (kind ``reordering``, score
  0.5), not an anomaly. The refusal reported and the work skipped (a pid file of a live job
  read, a warning written, the copy left out) keeps it named;
* a region with no error that opens by reopening a file its thread opened before (a Python
  traceback quoting the script's lines), in a run exiting with another status whose thread
  then writes its message, is named by that message (`_source_reread`);
* known events in another order in the thread whose child process is missing (every good run
  has it) are no reordering (make finding a stale target up to date skips its recipe);
* a wait interrupted by a signal (EINTR, ERESTART*) and never completed by its thread, at a
  (call, path) the good runs completed and never saw interrupted, is not covered by the
  allowlist's timing entries (`_abandoned_waits`: flock -w giving up, a child timeout kills
  in its open of a FIFO; `_killed_in_waits`: a call without a path, its thread's last, in a
  run a signal ended -- kill -9 of a job stuck in its sleep); nor is a retry loop that gave up (`_retries_given_up`: EAGAIN at a
  call the good runs completed, failed 3+ times by a thread that never completes it -- a
  lock its hung holder never lets go -- though the good runs' own retries taught the entry;
  at a call without a path, in a run exiting with another status, also a refusal every good
  run fell back from -- EACCES/EPERM, `FALLBACK_ERRNOS`: perf's kernel-time counter refused,
  retried user-only -- refused at the bad run's last attempt too); a wait killed in a process
  after another process failed ranks below that failure (`_demote_killed_waits`);
  nor is a wait for one child failing ECHILD where the good runs' waits for one child
  there returned it (`_lost_children`: the kernel reaped it under an inherited SIGCHLD
  SIG_IGN) -- the curated entry is for a reaper's wait for any child finding none left.
* a wait for a descriptor that *timed out* -- poll/select/epoll_wait returning 0 after
  blocking 10 ms or more, in a thread whose role no good run saw time out -- names the
  error-free region right after it (among the k events before its start, a window of the
  model) and keeps it from passing for a reordering (`_TimedOutWaits`: a stopped collector, a
  full accept queue, a server that never answers). Tokens carry no return value and waits are
  noise probes, so the program's reaction (its message, a close, the exit path every run has)
  was named instead; return values and latencies are read for the waits only, when asked.
* so does a thread's *first read of a file or from a connection's peer, or listing of a
  directory, that came back empty* -- read/recvfrom returning 0, getdents64 only "." and ".."
  -- at a call site (role, call, path) where a
  good run's first call had content and none came back empty (`_EmptyAnswers`: a manifest its
  generator never wrote to, an input directory a copy step left empty), for the error-free
  region within 4k events after it (the program may open and close its output first, as every
  run does); its ``empty_answer`` is true. And a *checked kill* (see Threads cut off) no good
  run of the sender's role sent names the error-free region of the sender right after it that
  never re-joins the good runs (`_KillsOnlyHere`: a supervisor killing its worker at a deadline
  its config set too short; a kill that was only timing leaves the sender doing what the good
  runs did next).
* a region with no error reaching its thread's end whose last call is a signal sent
  successfully (abort()'s tgkill of SIGABRT, raise(), a script killing its own group) is
  named by that call (`_raised_signals`), not by the first call of abort()'s preamble.
* the top anomaly -- an error at a path, or a thread's end with nothing failed -- ranks behind
  an error-free divergence of *another* process of the bad run that caused it
  (`_cause_in_another_process`): a successful truncate/unlink/rename/O_TRUNC open of a path
  the ended thread's process had used (a cleaner truncating a shard a job had mapped: SIGBUS),
  or of the error's own path before it; or a call going elsewhere where the good runs touched
  the error's path at that point (a build step writing to the directory its config names, so
  the publish step's cp finds nothing): that divergence takes the top score. A top ENOENT at
  a path under a directory whose first listing came back empty before it (an empty answer,
  above) is named by that listing (`_empty_listing_cause`: dash's glob over an empty
  directory leaves its pattern, and cat fails on ``incoming/*.csv``).

**Threads cut off.** A thread still running when its recording stopped (tracer record's
linger or -d ran out; the trace's metadata lists it, tracer.schema.CUT_OFF_KEY) did not end:
its stream gets no END token, so stopping earlier than a good run's is no ``(end of thread)``;
and a bad thread's error-free events or end past the point where a good run's record of that
thread was cut off are not reported (the good run says nothing there). A thread that really
ended early (killed, exited) where a good run's record goes on is still reported. A region
reaching the end of its thread with no error, no event new to the good runs and no exit call
of the thread's own is a thread **killed by a signal** (SIGSEGV, SIGBUS, the OOM killer: the
recorder sees the calls stop, no signal): it is named by its end, ``(end of thread)``, not by
the known call before it that shares the end's window (`_killed_threads`).
A thread its run's *teardown* cut off (`_Teardowns`: a signal another process of the run
sent while it was still running) is treated the same way from the signal on: a good run's
says nothing past it, a bad one's error-free end past it is the signal's timing, and so is a descriptor given back EBADF
past it (`_unwind_cleanups`: SIGTERM landing in socketserver's process_request after the handler
closed the request, whose clean-up then shuts the closed socket down). A *checked
kill* (right after the sender's wait4/waitid found the child still running) is itself timing
and leaves the streams. A thread its own *process's exit* cut off -- another thread of the
process called exit_group after it began, and its stream ends with no exit of its own (an
unjoined Python daemon thread still tidying up at interpreter exit) -- is cut there the same
way (`_Teardowns._cut_at_exit`); a crash or OOM kill makes no exit_group call. Errors are
never dropped.

**Exit status.** A bad run whose command exits with a status no good run had (column
``exit_status``; unknown statuses are not compared) has failed even when its calls all look
like the good runs' (a validator exiting 3; the only other sign is the bytes it wrote, which
tokens leave out). With no other anomaly, that is one (kind ``divergence``, score 2.5), named
by the bad run's last write to stdout/stderr/a tty/a pipe (its message; else its last event),
and a warning says both statuses; a region named by a message catalog lookup is named by the
message it was for, the thread's first such write after it (within 4k rows) that the good runs
do not make (`_message_translated`: tsort reports a loop, then writes the order it could make);
failing that, and for a region named by an event that says nothing (exit_group, END), by the
run's last write when it is the same thread's, within 4k rows before or after; so is an
error-free region that never re-joins, opened by an event the good runs have (known events in
another order: xz -T2's main thread reading ahead of its decoder threads), when the write is
its thread's, after its start; and so
is an error-free region that never re-joins, named by one more turn of a search -- a successful
lookup right after the same call on another path (`_search_went_on`: a module left out, the
import system's search going on past the directory the good runs found it in) -- when the write
is its thread's, after its start.

The
**bifurcation** is the top-ranked anomaly; ``first_unexplained`` separately gives the seq of
the chronologically first anomalous event (the same in the common single-divergence case).
A process every good trace has but the bad trace lacks is a ``missing_process`` anomaly
(score 1, position -1).

JSON object (``DiffReport.to_dict``; also docs/diff-json.md)
------------------------------------------------------------
::

    {
      "version": 1,
      "anomaly": bool,                       # true iff anomaly_count > 0
      "bifurcation": null | ANOMALY,         # = anomalies[0]
      "first_unexplained": null | int,       # seq of the chronologically first anomalous event
      "anomalies": [ANOMALY, ...],           # ranked, best first (at most max_anomalies)
      "anomaly_count": int,                  # before truncation
      "reorderings": [ANOMALY, ...],         # kind "reordering": listed, not anomalies
      "expected_ignored": {"total": int,
                           "by_entry": {ID: {"count": int, "source": "curated"|"learned",
                                             "probe": str, "errno": str, "path": str|null,
                                             "context": str|null}}},
      "good_traces": [str, ...], "bad_trace": str,
      "events": {"good": int, "bad": int},
      "settings": {"k": int, "learn": bool, "allowlist": str, "learned_entries": int,
                   "elapsed_s": float}
    }
    ANOMALY = {
      "rank": int, "score": float,
      "kind": "error" | "divergence" | "missing_process" | "reordering",
      "probe": str,                          # "(end of thread)" when the thread stopped early
      "errno": str | null,                   # symbolic ("EACCES"); null for error-free divergence
      "path": str | null,                    # as recorded; "npath": normalised form;
      "npath": str | null,                   #   two-path calls: the path the error is about
                                             #   (link's EPERM: the source, see SOURCE_ERRNOS)
      "path2": str | null,                   # the other path of a two-path call
      "then_wrote": str | null,              # first 256 chars BAD wrote to stdout/stderr/tty/pipe (text writes)
      "next_event": null | EVENT,            # after a content-free call: the next telling event
      "process": {"pid": int|null, "tid": int|null, "comm": str|null, "role": str},
      "position": int,                       # seq of the event in the bad trace (-1: none)
      "recovered": bool,                     # the thread re-joined known-good behaviour
      "unexplained_events": int,             # size of the region (compressed positions)
      "last_common": [EVENT, ...],           # up to `context` events before the region
      "good_instead": [EVENT, ...]           # what a good run did at that point
    }
    EVENT = {"seq": int|null, "probe": str, "errno": str|null, "path": str|null, "path2": str|null,
             "pid": int|null, "tid": int|null, "comm": str|null, "trace_id": str, "output": str|null}
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from baseline.run import align, heap, native
from baseline.run import compute as pc
from baseline.run.allowlist import (
    Entry,
    ExpectedErrors,
    distinct_errors,
    learn_expected,
    load_default,
    load_fallbacks,
)
from baseline.run.normalize import (
    Prepared,
    background,
    code_in,
    codes_where,
    isin,
    kept_rows,
    normalize_paths,
    stream_rows,
    stream_starts,
    thread_roles,
    unique_ints,
)
from baseline.run.traces import (
    OUTCOME_COLUMNS,
    EventColumns,
    bad_command_of,
    check_failures_only,
    check_good_commands,
    command_identity,
    describe_source,
    exit_statuses,
    load_table,
    number_traces,
    pick_bad_trace,
    prepare_both,
    recording_settings,
    shown_command,
    trace_values,
)
from tracer import units
from tracer.errors import TracebaseError, printable

if TYPE_CHECKING:
    from collections.abc import Callable

    from baseline.run.traces import PathsLike
from baseline.run.report import REPEATED_IN_SHOWN, DiffReport
from baseline.run.rules.base import (
    END_PROBE,
    NOT_RECOVERED_BONUS,
    SEVERITY,
    SOFT_ERRNOS,
    _bad_row_count,
    _call_keys,
    _error_class,
    _good_rows_where,
    _near,
    _Rows,
    _seq_of,
    _strip,
)
from baseline.run.rules.blame import (
    _allowlisted_cause,
    _blames_target,
    _enotty_known_there,
    _exit_anomaly,
    _explained_without,
    _first_of_cascade,
    _first_of_failed_walk,
    _first_of_repeats,
    _found_where_good_missed,
    _known_errors_after_new,
    _last_output,
    _leftover_then_message,
    _loop_turns_before_divergence,
    _message_after,
    _message_translated,
    _new_pathless_errors,
    _quoted_error,
    _raw_outcome_changes,
    _reported_error,
    _says_nothing,
    _seen_events,
    _silent_before_reported,
)
from baseline.run.rules.files import (
    _attributes_retouched,
    _cache_misses_filled,
    _catalog_lookups,
    _descriptor_plumbing,
    _environment_data,
    _existing_directories,
    _exit_time_stream_syncs,
    _extra_entries,
    _idem_mkdir_causes,
    _listing_twins,
    _lock_fates,
    _parents_made_on_demand,
    _proc_scan_races,
    _rotations,
    _search_went_on,
    _shadowing_find,
    _source_reread,
    _sweep_turns,
    _warm_caches_refilled,
    _warm_caches_refilled_by_children,
)
from baseline.run.rules.processes import (
    _after_failed_child,
    _cause_in_another_process,
    _demote_consequences,
    _killed,
    _killed_job_reports,
    _killed_threads,
    _lost_children,
    _match_by_exec_history,
    _missing_roles,
    _raised_signals,
    _reaped_by_own_reaper,
    _reordered_at_end,
    _sigpipe_deaths,
    _Teardowns,
    _unwind_cleanups,
)
from baseline.run.rules.retries import (
    _descriptor_room_made,
    _fallback_answers,
    _fallback_cause,
    _fallback_lookups,
    _given_up_cause,
    _GoodMessages,
    _known_errors_gone_on,
    _pathless_retries_given_up,
    _probe_misses,
    _recovered_fallbacks,
    _retried,
    _retried_by_parent,
    _retries_given_up,
    _room_made_cause,
    _room_made_first_met,
)
from baseline.run.rules.waits import (
    _abandoned_waits,
    _empty_listing_cause,
    _EmptyAnswers,
    _killed_in_waits,
    _KillsOnlyHere,
    _known_step_elsewhere,
    _only_slept,
    _TimedOutWaits,
    _timing_reads,
)

# The longest model window: windows are hashed position by position, so the work grows with k
# (k = 10**8 ran for minutes); stide's useful windows are a handful of events.
MAX_WINDOW = 1000
REORDER_SCORE = 0.5
# Calls whose number and position depend on timing, the allocator or randomness, not on the
# program's logic (malloc arenas, futex contention, signal delivery, getrandom retries). When
# they succeed (or fail expectedly) they are left out of the streams; an unexpected error on
# one still counts.
NOISE_PROBES = frozenset(
    {
        "brk", "mmap", "munmap", "mremap", "madvise", "mprotect", "futex", "futex_waitv",
        "futex_wait", "futex_wake", "futex_requeue",
        "rt_sigreturn", "rt_sigprocmask", "rt_sigaction", "getrandom", "sched_yield",
        "restart_syscall",
        # Waiting for a descriptor: whether data is already there when a thread asks (no
        # wait) or not (a poll first) is timing (multiprocessing's result pipes).
        "poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2",
        # A thread's own exit: when the main thread ends the process first (Python's join
        # returns before its threads' final exit), exit_group kills the thread before it.
        "exit",
        # Access-pattern hints (posix_fadvise on every input of cat, tr, cp, sort): on a file
        # it succeeds, on a pipe it fails ESPIPE (curated-espipe-fadvise), so whether a run
        # makes it succeed is whether its stdin was a file -- the caller's plumbing.
        "fadvise64", "fadvise64_64",
    }
)
# EAGAIN from a call that maps memory is no contention but a resource limit: too much memory
# locked (mmap(MAP_LOCKED) over RLIMIT_MEMLOCK, what registering RDMA memory meets). It stays
# in the streams even though EAGAIN is a timing errno elsewhere (futex, a non-blocking read).
MEMORY_LIMIT_PROBES = frozenset({"mmap", "mremap", "mprotect", "brk"})
# Salt for the token of an error at the very path where the good runs succeeded: loop
# compression must not fold it into the identical-looking routine misses before it.
RAW_CHANGE_SALT = np.uint64(0x5A17_0C0D_E5A1_7ED5)
# An error at a call the good runs also make, with another outcome there (success, or
# another errno), outranks novelty (a path, call or error the good runs never had).
OUTCOME_CHANGE_BONUS = 3.5
# Errnos that depend on timing or on what a descriptor is, not on the path: a success of the
# same (call, path) in good runs says nothing against them being routine.
TIMING_ERRNOS = frozenset({"EAGAIN", "EWOULDBLOCK", "EINTR", "ENOTTY", "ETIMEDOUT", "ECHILD", "EINPROGRESS",
                           "EALREADY", "ERESTARTSYS", "ERESTARTNOINTR", "ERESTARTNOHAND", "ERESTART_RESTARTBLOCK"})
# A question about a socket's peer (getpeername) answered ENOTCONN says the peer had already
# gone when the program asked -- the peer's timing, not the program's logic: a server killed
# while its handler thread finishes a request finalises the accepted socket, and Python's
# "unclosed socket" warning asks for the peer's address, in some runs after the handler's
# shutdown() (ENOTCONN) and in others before it or not at all. A shutdown answered ENOTCONN
# says the same of a connection both sides were already closing: `nc -N` shuts its write side
# at stdin's end and its read side at the peer's EOF, and the second is ENOTCONN when the
# kernel finished the close in between (40 of 40 runs under strace).
# The connection's own failure shows in a connect, read or write. Dropped like timing noise.
PEER_GONE_TIMING = (frozenset({"getpeername", "shutdown"}), frozenset({"ENOTCONN"}))
# Errnos of a poll or retry loop: transient when the thread later succeeds at the same call
# (a peer refusing, or resetting, a connection the next attempt gets through: wget --tries).
RETRY_ERRNOS = SOFT_ERRNOS | {"ECONNREFUSED", "ECONNRESET"}
MISSING_PROBE = "(process missing)"


def _release(p: Prepared, *names: str) -> None:
    """Drop per-row arrays the rest of the diff does not read (display needs seq, probe,
    errno, path key, pid, tid, trace key and the raw path/comm): freed before the window model
    is built. The source order stays, even with no raw column left in `p.table`: the outcome
    columns (ret, latency) are read in source order through it (a trace without arg, path2 and
    output columns, whose listing came back empty, failed on it: an internal error)."""
    for name in names:
        setattr(p, name, None)
    p.table = p.table.select([c for c in ("arg", "path2", "output") if c in p.table.column_names])


def _role_comm(p: Prepared, gs: align.Streams, g_bounds: tuple[np.ndarray, np.ndarray], s_rolekey: list[str],
               role: str) -> str:
    """The process name of a good stream of `role`, as recorded (its last row's: after its exec).
    Not the role's last component: a name holding '/' (kworker/0:1, any prctl name) is cut
    there ('<n>:<n>')."""
    g_start, g_end = g_bounds
    for j, rk in enumerate(s_rolekey):
        if rk == role and j < len(g_end) and g_end[j] > g_start[j]:
            rows = gs.orig[int(g_start[j]) : int(g_end[j])]
            rows = rows[rows >= 0]
            if len(rows):
                return str(p.value("comm", int(rows[-1])))
    return role.rsplit("/", 1)[-1].lstrip("~")


def _stream_roles(p: Prepared) -> tuple[np.ndarray, list[str], list[str]]:
    """Per stream (by sid): trace key, role key and role (see baseline.run.normalize)."""
    rows = stream_rows(p)
    threads = [dict(zip(rows, vals, strict=True)) for vals in zip(*rows.values(), strict=True)]
    role_of = {(t, tid): (key, role) for t, tid, key, role in thread_roles(threads, "tkey")}
    pairs = [role_of[(t, tid)] for t, tid in zip(rows["tkey"], rows["tid"], strict=True)]
    return np.array(rows["tkey"], dtype=np.int64), [k for k, _ in pairs], [r for _, r in pairs]


def _lost_events(table: EventColumns) -> int:
    """The events the recordings of `table` say they lost (lost_events: one value per trace)."""
    return sum(v for v in trace_values(table, "lost_events") if v is not None and v > 0)


def _pool_streams(s_tkey: np.ndarray, matched_role: list[str], is_bad_stream: np.ndarray) -> np.ndarray:
    """Per stream: its role is a pool's -- some good run has two threads or more of it (thread
    roles carry no ordinal: every worker of a pool has its role key)."""
    per_run: dict[tuple[int, str], int] = {}
    for t, role, bad in zip(s_tkey.tolist(), matched_role, is_bad_stream.tolist(), strict=True):
        if not bad:
            per_run[(t, role)] = per_run.get((t, role), 0) + 1
    pools = {role for (_, role), n in per_run.items() if n >= 2}
    return np.array([role in pools for role in matched_role], dtype=bool)


def _known_and_error_free(regions: align.Regions, b_cls: np.ndarray, novel: np.ndarray) -> np.ndarray:
    """Per region: no error and no event new to the good runs -- their work, in another order
    or cut short (the SIGPIPE rule and the idempotent mkdir's, before the regions' maxima are
    taken once for the naming below)."""
    return (regions.max_over(b_cls) == 0) & ~regions.max_over(novel)


def _fold_sibling_repeats(p: Prepared, bs: align.Streams, order: np.ndarray, named: np.ndarray, shown: np.ndarray,
                          reorder: np.ndarray, region_sid: np.ndarray, roles: tuple[list[str], list[str]],
                          ) -> tuple[np.ndarray, dict, dict]:
    """`order` (regions, ranked) without the anomalies that repeat a better-ranked one -- the same
    call, errno and path named -- in a sibling process or thread of the same role key (`roles`:
    per stream, role key and role; `sh/mkdir#0`, `sh/mkdir#7`) or again in the same thread: a
    shell loop running the same command again and again (`until mkdir ...; do sleep; done`), a
    pool thread whose every task fails at one shared journal, is one fault, named once, not
    twenty times. Returns the kept order and, per kept region, how many were folded into it and
    the other roles they came from (each once, in order)."""
    role_keys, s_role = roles
    kept: list[int] = []
    firsts: dict[tuple, int] = {}
    folded: dict[int, int] = {}
    others: dict[int, list[str]] = {}
    for r in order.tolist():
        row = int(shown[r]) if shown[r] >= 0 else int(bs.orig[named[r]])
        if reorder[r] or row < 0:
            kept.append(r)
            continue
        sid = int(region_sid[r])
        # (the raw path too: a loop over files of one masked name -- part1, part2 -- missing
        # each is as many faults, each file named)
        raw = int(p.raw_path[row]) if p.raw_path is not None else -1
        key = (int(p.probe[row]), int(p.errno[row]), int(p.plainpath[row]), raw, role_keys[sid])
        first = firsts.get(key)
        if first is None:
            firsts[key] = r
            kept.append(r)
            continue
        folded[first] = folded.get(first, 0) + 1
        role = s_role[sid]
        seen = others.setdefault(first, [])
        if role != s_role[int(region_sid[first])] and role not in seen:
            seen.append(role)
    return np.asarray(kept, dtype=np.int64), folded, others


def diff_traces(
    good: PathsLike,
    bad: PathsLike,
    expected: ExpectedErrors | str | os.PathLike | None = None,
    learn: bool = True,
    *,
    k: int = 4,
    context: int = 3,
    trace_id: str | None = None,
    mixed: bool = False,
    max_anomalies: int = 20,
    noise_probes: frozenset[str] | set[str] = NOISE_PROBES,
) -> DiffReport:
    """Diff one bad trace against good traces (see the module docstring for the method).

    `expected`: an ExpectedErrors, a YAML path, or None for the repo's expected_errors.yaml.
    `learn`: also treat every error the good runs produced as expected.
    """
    # the library's callers pass these too: a str or float is refused naming the argument, not
    # a TypeError from a comparison deep inside
    k = units.int_range(k, "-k/--window", lo=1, hi=MAX_WINDOW)
    context = units.non_negative_int(context, "--context")
    max_anomalies = units.positive_int(max_anomalies, "--max-anomalies")
    if trace_id is not None and not isinstance(trace_id, str):
        raise TypeError(f"trace_id: expected a str or None, found {type(trace_id).__name__} {trace_id!r}")
    t0 = time.perf_counter()
    if expected is None:
        allow = load_default()
    elif isinstance(expected, ExpectedErrors):
        allow = expected
    else:
        allow = ExpectedErrors.load(expected)
    warnings: list[str] = []
    good_tab = load_table(good, skip=("output", "start_time"), warnings=warnings)
    bad_tab, bad_id = pick_bad_trace(load_table(bad, skip=("start_time",)), describe_source(bad), trace_id)
    good_codes = number_traces(good_tab)
    if bad_id in good_codes[1]:
        # the same recording as good and as bad (one file twice, a copy, a glob of GOOD that
        # caught BAD): every call of it is explained by itself, so the answer was always "no
        # anomaly", a wrong one for a failing run
        raise TracebaseError(f"{printable(describe_source(bad))}: trace_id: expected a bad trace that is not also "
                             f"a GOOD trace, found '{printable(bad_id)}' among the GOOD traces too (a trace is "
                             "always explained by itself; leave it out of GOOD)")
    good_commands = check_good_commands(good_tab, describe_source(good), mixed, good_codes)
    # a bad trace of another program than the good runs' (`diff ls.parquet job.parquet`): a diff
    # of two programs names a meaningless bifurcation -- said, as the command may differ in
    # arguments only where the tool was called another way
    bad_command = bad_command_of(bad_tab)
    if not mixed and bad_command is not None and command_identity(bad_command) not in good_commands:
        shown = "; ".join(shown_command(c) for c in list(good_commands.values())[:3])
        warnings.append(f"the BAD trace ran {shown_command(bad_command)}, the GOOD traces {shown}: "
                        "a diff of different commands")
    if _holds(good_tab.column("kind"), "failure"):
        warnings.append("some GOOD traces are labelled kind=failure")

    # The command's exit status: a bad run ending with a status no good run had has failed even
    # when every call it made looks like the good runs' (a validator's exit 3 after reading
    # its input: the only other sign is the bytes it wrote). Unknown statuses say nothing.
    good_status, bad_status = exit_statuses(good_tab), exit_statuses(bad_tab)
    # ... and a GOOD run that failed (a recording of the failing run given as GOOD by mistake)
    # teaches its errors as expected: said, as a diff of different commands is
    failed_good = sorted(s for s in good_status if s is not None and s != 0)
    if failed_good:
        warnings.append(f"some GOOD traces exited with status {', '.join(map(str, failed_good))}, not 0: a failed "
                        "run given as GOOD has its errors taken as expected")
    # A recording whose ring buffer overflowed lacks calls: the bad run's bifurcation may be
    # among them, and a good run's missing calls leave the bad run's same calls unexplained.
    for side, lost in (("BAD trace", _lost_events(bad_tab)), ("GOOD traces", _lost_events(good_tab))):
        if lost:
            warnings.append(f"the {side} lost {lost:,} events (the recording's buffer overflowed): "
                            + ("the bifurcation may lie among them" if side == "BAD trace" else
                               "calls of the BAD trace they would explain may be shown as new"))
    exit_changed = None not in good_status | bad_status and not bad_status <= good_status
    same_exit = None not in good_status | bad_status and bad_status <= good_status
    # Threads the recording cut off (still running when it stopped: tracer record's linger or
    # -d ran out): their streams end because the recording did (see _beyond_cut_off).
    (cut_good, x_good), (cut_bad, x_bad) = recording_settings(good_tab), recording_settings(bad_tab)
    check_failures_only(x_good, x_bad, describe_source(good), describe_source(bad))
    # return values and latencies, read for the waits of a thread that diverged only (see _TimedOutWaits)
    outcomes = EventColumns.concat([bad_tab, good_tab]).offering(OUTCOME_COLUMNS)
    tables = [bad_tab, good_tab]
    del good_tab, bad_tab  # handed over: prepare frees each column once converted
    handed = [good_codes]
    del good_codes  # handed over too: prepare_both frees the per-row trace numbers once used
    p, bad_ids, good_ids = prepare_both(tables, handed, [bad_id])
    # A record delivered twice is read once, its first copy (the data model's rule); a second
    # record under the same (trace, thread, seq) that is not a copy (another call, error or path)
    # is data the diff did not look at: said
    for side, twice in (("BAD trace holds", p.records_twice[0]), ("GOOD traces hold", p.records_twice[1])):
        if twice:
            warnings.append(f"the {side} {twice:,} record{'s' if twice > 1 else ''} sharing trace, thread and seq "
                            "with another but not its call, error or path: each seq read once, its first record")
    n_rows = len(p)
    nb = _bad_row_count(p)  # bad rows are rows 0..nb-1
    rows = _Rows(p, bad_ids, good_ids)
    message_row = _last_output(p, nb) if exit_changed else -1
    # An idempotent mkdir (mkdir -p, makedirs(exist_ok=True)) that found its directory is a
    # mkdir that succeeded; its check that the path is a directory drops out below.
    idem_mkdir, idem_check = _existing_directories(p)
    idem_errno = p.errno[idem_mkdir].copy()
    p.errno[idem_mkdir] = -1
    # A wait for one child that the process's own SIGCHLD handler reaped first is that wait's
    # success; the handler's reaping wait drops out below.
    own_reaped, own_reapers = _reaped_by_own_reaper(p, outcomes)
    own_errno = p.errno[own_reaped].copy()
    p.errno[own_reaped] = -1

    # Expected errors: curated file + learned from the good runs, matched per distinct error.
    learned: list[Entry] = learn_expected(p) if learn else []
    rules = ExpectedErrors(list(allow.entries) + learned, source=allow.source)
    expected_mask = np.zeros(n_rows, dtype=bool)
    err_cls_rows = np.zeros(n_rows, dtype=np.int8)
    by_entry: dict[str, dict[str, Any]] = {}
    # (call, path) keys on the plain normalised path (no search masking): what the good runs
    # completed successfully, and every outcome they had there.
    # Only the call sites where some error happened matter: the good rows at those (few)
    # sites are found with one membership pass, the rest is on that small subset.
    # Call keys are computed for those rows only (8 bytes a row otherwise): the good rows of
    # a probe some error has, then the ones at an erring call site among them.
    # The rules below start from the rows with an error (a few thousand of two million): their
    # other columns are gathered for those rows only, never tested on every row.
    err_any = np.flatnonzero(p.errno >= 0)
    err_rows = err_any[p.plainpath[err_any] >= 0]
    err_calls = unique_ints(_call_keys(p, err_rows))
    cand = _good_rows_where(code_in(p.probe[nb:], p.probe[err_rows], len(p.probe_values)), nb)
    cand_calls = _call_keys(p, cand)
    pos = np.minimum(np.searchsorted(err_calls, cand_calls), max(len(err_calls) - 1, 0))  # small sorted set
    hit = err_calls[pos] == cand_calls if len(err_calls) else np.zeros(len(cand), dtype=bool)
    at_sites, site_calls = cand[hit], cand_calls[hit]
    del cand, cand_calls, pos, hit
    n_errnos = np.int64(len(p.errno_values) + 1)
    good_ok_calls = unique_ints(site_calls[p.errno[at_sites] < 0])
    good_calls = unique_ints(site_calls)
    good_outcomes = unique_ints(site_calls * n_errnos + (p.errno[at_sites] + 1))
    del at_sites, site_calls
    # Bad errors of calls without a path (prctl, unshare, mbind) whose (call, errno) no good
    # run's process of that name had, or had fewer times: a new failure there (see
    # _allowlisted_cause).
    new_pathless = _new_pathless_errors(p, nb, err_any)
    timing_codes = codes_where(p.errno_values, TIMING_ERRNOS)
    # the timing errnos that say nothing about what a descriptor is (ENOTTY does)
    waits_codes = codes_where(p.errno_values, TIMING_ERRNOS - {"ENOTTY"})
    # Per bad row: an error where the good runs had another outcome at the same call.
    bad_err = err_rows[err_rows < nb]
    outcome_change = np.zeros(n_rows, dtype=bool)
    bad_calls = _call_keys(p, bad_err)
    outcome_change[bad_err] = isin(bad_calls, good_calls) & ~isin(
        bad_calls * n_errnos + (p.errno[bad_err] + 1), good_outcomes)
    # An error the same thread gets past later at the same call (a poll or a retry loop: the
    # file appears, the service comes up) is transient: how many attempts it took is timing.
    # Found in the worker thread (idle here; `_retried` only reads `p`, and its passes over
    # every row release the GIL) while this one finds the probe loops and the raw outcome
    # changes below: ~20 ms less on this thread's path for two million events.
    retry_codes = codes_where(p.errno_values, RETRY_ERRNOS)
    hard_codes = codes_where(p.errno_values, lambda v: _error_class(v) == 2 and v not in RETRY_ERRNOS)
    retry_cand = err_rows[isin(p.errno[err_rows], retry_codes)]
    retried_done = background().submit(_retried, p, retry_cand, hard_codes)
    # ... and a shell's loop running a program again until it gets past (each attempt a process)
    retried_by_parent = _retried_by_parent(p, retry_cand)
    del retry_cand
    # An error at the very path (as recorded, before masking) where the good runs succeeded
    # and never failed so: an outcome change even when masking and loop compression make it
    # look like an error the good runs also have (shard-00002 missing, where the good runs'
    # scan ends with ENOENT at shard-00005).
    # The misses of a loop trying a numbered family's members until one answers (the one
    # device node is uverbs2 on this host, uverbs0 on another): which member answered is the
    # host's, so the misses before the answer are transparent -- no raw outcome change either.
    probed = _probe_misses(p, err_rows)
    raw_change = _raw_outcome_changes(p, nb, bad_err[~outcome_change[bad_err] & ~probed[bad_err]], good_ok_calls)
    outcome_change |= raw_change
    # A wait interrupted by a signal and never completed (flock -w giving up, a child killed
    # by timeout in its open of a FIFO) is where the run stopped: no entry covers it.
    abandoned = _abandoned_waits(p, nb, bad_err, good_ok_calls, good_outcomes, n_errnos)
    abandoned |= _retries_given_up(p, nb, bad_err, good_ok_calls)
    # the same for a call without a path, in a run that failed (see _pathless_retries_given_up)
    given_up = _pathless_retries_given_up(p, nb, err_any) if exit_changed else np.zeros(n_rows, dtype=bool)
    abandoned |= given_up
    # ... and a call without a path a signal from outside ended the run in (kill -9 of a job
    # stuck in its sleep: the only trace of it, see _killed_in_waits)
    if exit_changed and any(s is not None and s > 128 for s in bad_status):
        abandoned |= _killed_in_waits(p, nb, err_any)
    # A wait for one child that found it reaped elsewhere, where the good runs' returned it:
    # no entry covers it, and the good runs had another outcome there.
    lost = _lost_children(p, nb)
    abandoned |= lost
    outcome_change |= lost
    del lost
    # The rules below do not need the retry loops: worked out while the worker finds them (it
    # takes longer than the rules above), then merged with them.
    settled = _proc_scan_races(p)
    settled[idem_check] = True
    settled[own_reapers] = True
    settled |= _listing_twins(p, nb)
    # One more turn of a directory sweep (the JVM's hsperfdata sweep finding another JVM alive)
    if same_exit:
        settled |= _sweep_turns(p, nb, rules)
    room_made = _descriptor_room_made(p, err_any)
    settled |= room_made
    # ... where no good run met the limit: the cause of a region the thread's way around it
    # opens (see _room_made_cause)
    room_first_met = _room_made_first_met(p, nb, room_made)
    del room_made
    settled |= probed
    del probed
    # A create failing ENOENT, the thread making the missing parent directory and creating
    # again (git's loose objects in their fan-out directory): one create, like a good run's
    # that found the directory (which objects' directories exist depends on their hashes).
    settled[_parents_made_on_demand(p, codes_where(p.probe_values, noise_probes))] = True
    # A cache miss the thread then fills (python's bytecode cache of the module it imports:
    # missing, compiled, renamed onto it): which cache a run misses follows what it loads.
    settled[_cache_misses_filled(p, good_ok_calls)] = True
    # A cache the good runs found warm, missed and filled again (computed, written to a
    # temporary, renamed onto it): the miss and the fill drop out.
    settled[_warm_caches_refilled(p, good_ok_calls)] = True
    # ... and one filled by the processes it starts (a shell script's mkdir -p, sha256sum, mv):
    # the miss, the fill's calls and its new processes' soft errors drop out.
    settled[_warm_caches_refilled_by_children(p, good_ok_calls)] = True
    # A writer rotating its own file (close, shift the backups, rename it aside, create it
    # again): how many times it rotated is how much it wrote.
    settled[_rotations(p)] = True
    # An input stream given back at exit on a pipe (lseek ESPIPE, then the exit): whether its
    # buffer held unread data is how much the writer had written when the reader filled it.
    settled[_exit_time_stream_syncs(p, codes_where(p.probe_values, noise_probes))] = True
    retried = retried_done.result()
    retried |= settled
    retried |= retried_by_parent
    del retried_by_parent
    del retried_done, settled, err_rows
    for err in distinct_errors(p, err_any, with_plain=True):
        # No entry covers an error at a (call, path) the good runs completed successfully --
        # timing errnos aside, but not ENOTTY: it says what the descriptor is, and the good
        # runs' answered there (a device node made with the wrong numbers: the provider's
        # query ioctl fails ENOTTY where the good runs' node answered it; the curated isatty
        # entry stays for files and pipes no good run asked successfully).
        first = int(err["rows"][0])
        done_in_good = (
            p.plainpath[first] >= 0 and p.errno[first] not in waits_codes
            and bool(isin(_call_keys(p, first), good_ok_calls))
            and not _enotty_known_there(p, first, good_outcomes, n_errnos)
        )
        # The plain normalised path first (curated globs name directories), then the
        # search-masked one (learned entries generalise over search directories), then the
        # second path of a two-path call. The process name is the context (diff's learned
        # entries) and the caller an entry's `comm` names (routine for one program only).
        comm = err["ncomm"]
        entry = None if done_in_good else (
            rules.match(err["probe"], err["errno"], err["plain_npath"], comm, comm)
            or rules.match(err["probe"], err["errno"], err["npath"], comm, comm)
            or (rules.match(err["probe"], err["errno"], err["path2"], comm, comm) if err.get("path2") else None)
        )
        covered = err["rows"]
        if entry is not None and abandoned[covered].any():
            err_cls_rows[covered[abandoned[covered]]] = _error_class(err["errno"], err["probe"])
            covered = covered[~abandoned[covered]]
        if entry is None:
            err_cls_rows[covered] = _error_class(err["errno"], err["probe"])
            continue
        expected_mask[covered] = True
        in_bad = int(np.count_nonzero(covered < nb))
        if in_bad:
            info = by_entry.setdefault(entry.id, {"count": 0, "source": entry.source, "probe": entry.probe,
                                                  "errno": entry.errno, "path": entry.path,
                                                  "context": entry.context})
            info["count"] += in_bad
    noise_codes = codes_where(p.probe_values, noise_probes)
    noise = frozenset(noise_codes.tolist())  # the caller's noise probes, for the naming steps below
    # Noise probes drop out when they succeed or fail for timing (futex EAGAIN/ETIMEDOUT
    # under contention, EINTR): how often that happens is scheduling, not program logic.
    # A row without an error drops out when it is a noise call or retried; the rest of the
    # rule (entries, peer queries, memory limits, error classes) is about errors, so it is
    # worked out on the rows with an error alone (`err_any`).
    is_noise = code_in(p.probe, noise_codes, len(p.probe_values))
    drop = retried | is_noise | _timing_reads(p) | _environment_data(p)
    probe_e, errno_e = p.probe[err_any], p.errno[err_any]
    memory_eagain = code_in(probe_e, codes_where(p.probe_values, MEMORY_LIMIT_PROBES),
                            len(p.probe_values)) & code_in(
        errno_e, codes_where(p.errno_values, ("EAGAIN", "EWOULDBLOCK")), len(p.errno_values))
    peer_gone = code_in(probe_e, codes_where(p.probe_values, PEER_GONE_TIMING[0]),
                         len(p.probe_values)) & code_in(
        errno_e, codes_where(p.errno_values, PEER_GONE_TIMING[1]), len(p.errno_values))
    drop[err_any] = expected_mask[err_any] | retried[err_any] | peer_gone | (
        is_noise[err_any]
        & ((err_cls_rows[err_any] == 0) | (code_in(errno_e, timing_codes, len(p.errno_values)) & ~memory_eagain)))
    del memory_eagain, peer_gone, is_noise, probe_e, errno_e, err_any
    # Errors the good runs had at the same call with the same errno (see _known_errors_gone_on):
    # an outcome change (the very path the good runs opened), a wait abandoned and a child lost
    # are none.
    known_errors = bad_err[~outcome_change[bad_err] & ~abandoned[bad_err] & (err_cls_rows[bad_err] > 0)]
    known_errors = known_errors[isin(_call_keys(p, known_errors) * n_errnos + (p.errno[known_errors] + 1),
                                        good_outcomes)]
    del expected_mask, retried, abandoned
    # A supervisor's checked kill (its child found still running) is timing: dropped.
    teardown = _Teardowns(p, outcomes, noise_codes, nb)
    drop[teardown.checked] = True
    # A lock some runs published and others discarded: which clean ending it had is timing.
    drop[_lock_fates(p)] = True
    # A shell's report of a job it killed itself ("Terminated"): whether it says so is timing.
    drop[_killed_job_reports(p, nb, good)] = True

    # Streams and roles (bad streams first).
    s_tkey, s_rolekey, s_role = _stream_roles(p)
    stream_first_rows = stream_starts(p)  # (a cause reported from another stream is shown in its role)
    n_streams = len(s_tkey)
    is_bad_stream = s_tkey == -1
    open_end = _cut_off_streams(p, s_tkey, cut_bad.get(bad_ids[0], frozenset()),
                                [cut_good.get(t, frozenset()) for t in good_ids])
    # a good run's thread its run's teardown cut off says nothing past there, like one the
    # recording cut off
    open_end |= teardown.good_cut
    # ... and so does one its reader's early exit killed (SIGPIPE); in a bad run exiting as the
    # good runs did, that death is timing too: its EPIPE drops out and the thread merely stops
    # (see _sigpipe_deaths). In a run exiting otherwise it stays, ranked as a consequence.
    sigpipe_rows, reraise_rows, sigpipe_streams = _sigpipe_deaths(p, s_tkey)
    bad_sigpipe = sigpipe_rows[sigpipe_rows < nb]
    open_end |= sigpipe_streams & ~is_bad_stream
    if same_exit:
        open_end |= sigpipe_streams
        drop[bad_sigpipe] = True
        drop[reraise_rows[reraise_rows < nb]] = True  # its handler's re-raise goes with it
        bad_sigpipe = bad_sigpipe[:0]
    good_roles = {rk for rk, b in zip(s_rolekey, is_bad_stream, strict=True) if not b}
    matched_role = list(s_rolekey)
    if any(rk not in good_roles for rk, b in zip(s_rolekey, is_bad_stream, strict=True) if b):
        matched_role = _match_by_exec_history(p, s_rolekey, is_bad_stream, good_roles)
    for i in np.flatnonzero(is_bad_stream):
        rk = s_rolekey[i]
        if matched_role[i] not in good_roles:
            name = rk.rsplit("/", 1)[-1]
            same = sorted(g for g in good_roles if g.rsplit("/", 1)[-1] == name)
            if same:
                matched_role[i] = same[0]
    role_ids = {rk: j + 1 for j, rk in enumerate(sorted(set(matched_role)))}
    role_hash = align._mix(np.array([role_ids[r] for r in matched_role], dtype=np.uint64) * np.uint64(0x9E37))

    # Tokens for the kept rows only (a row index array, the fields gathered for those rows).
    # the kept row numbers, built in their final (narrow) type: no 8-byte index array
    keep = kept_rows(drop)
    # which rows were kept, a bit each: the rows just before a region are read from them
    # (`_rows_before`), as loop compression left only a loop's first turn in the streams
    np.logical_not(drop, out=drop)
    kept_bits = np.packbits(drop)
    del drop
    _release(p, "ppid", "ncomm")
    sid = p.sid[keep]
    if n_streams < 2**15:  # stream ids in 2 bytes a position
        sid = sid.astype(np.int16)
    # The virtual END tokens (align.with_end_tokens) get their slots before the tokens are
    # packed: the kept rows with -1 at each END, so the streams are built once at their final
    # length instead of copied once more (~19 MiB more at that point for two million events).
    pos = align.end_slots(sid, open_end)
    orig = np.insert(keep, pos, -1)
    del keep
    sid = np.insert(sid, pos, sid[pos - 1])
    del pos
    handed = [align.Streams(p.tokens(orig, end=align.END), sid, orig)]
    del sid
    # An error at the very path where the good runs succeeded keeps a token of its own: the
    # same-looking misses before it (a provider looked for in p1, p2, then p3, where the good
    # runs found it) would otherwise fold it away as one more turn of a loop.
    # (Most diffs have no such error: the gathers through every position are skipped then.)
    any_raw_change = bool(raw_change.any())
    if any_raw_change:
        salted = raw_change[orig]
        salted &= orig >= 0  # (an END slot's -1 read the last row)
        if salted.any():
            handed[0].tok[salted] ^= RAW_CHANGE_SALT
        del salted
    del orig
    p.errno[idem_mkdir] = idem_errno  # tokens made: shown as recorded
    p.errno[own_reaped] = own_errno
    timeouts = _TimedOutWaits(p, outcomes, nb)  # keeps the waits' streams: sid is released now
    empties = _EmptyAnswers(p, outcomes, nb)  # so do the first reads'
    kills = _KillsOnlyHere(p, teardown, nb)  # and the checked kills'
    _release(p, "narg", "depth", "sid")
    # Bad streams are numbered first, so their positions are a prefix: split by views. A loop
    # never spans two streams, so each side is compressed on its own (in place, in its part of
    # the arrays): the bad side, then its window hashes, in the worker thread while this one
    # compresses the good side (the compiled passes release the GIL; the worker is idle here).
    s = handed.pop()
    split = int(native.search_sorted(s.sid, np.count_nonzero(is_bad_stream)))
    bad_side = background().submit(_compressed_and_hashed, s.slice(0, split), role_hash, k)
    gs = align.compress_loops([s.slice(split, len(s))])
    del s
    # the good windows' hash set too, while the worker still hashes the bad side's windows
    heap.release_free_pages()  # the prepared columns' holes, before the set (see baseline.run.heap)
    good_windows = [align.window_set(gs, role_hash, k)]
    bs, bh = bad_side.result()
    del bad_side
    explained, gh = align.windows_seen(bh, gs, role_hash, k, good_windows)
    # the good windows' hashes (for naming regions) made by the worker, idle now, while this
    # thread finds the regions: the set is freed, so the two never live at once
    gh_done = background().submit(align.window_hashes, gs, role_hash, k) if gh is None else None
    if any_raw_change:
        explained &= ~np.where(bs.orig >= 0, raw_change[np.maximum(bs.orig, 0)], False)
    del raw_change
    # An unexplained event no good stream of its role has at all (only those positions matter:
    # `novel` is unexplained by construction, and neither array changes below).
    unexplained = np.flatnonzero(~explained)
    novel = np.zeros(len(bs), dtype=bool)
    novel[unexplained] = ~_seen_events(bs.take(unexplained), gs, role_hash)
    regions = align.divergence_regions(bs, explained, k)

    seq_rows = p.seq
    b_cls = np.where(bs.orig >= 0, err_cls_rows[np.maximum(bs.orig, 0)], 0) * ~explained
    b_cls[_known_errors_gone_on(bs, known_errors, explained, k, n_rows)] = 0
    known_error_pos = isin(bs.orig, known_errors) if len(known_errors) else np.zeros(len(bs), dtype=bool)
    del known_errors
    b_start, b_end = bs.bounds(n_streams)
    g_start, g_end = gs.bounds(n_streams)
    if gh_done is not None:
        gh = gh_done.result()
    del gh_done
    if len(regions) and open_end.any():
        all_open: dict[str, bool] = {}
        for j in np.flatnonzero(~is_bad_stream & (g_end > g_start)).tolist():
            all_open[matched_role[j]] = all_open.get(matched_role[j], True) and bool(open_end[j])
        cut_points = teardown.good_cut_points(gs, g_start, g_end, seq_rows, matched_role)
        # (a good thread SIGPIPE killed stood at its last call before the failed write)
        for j in np.flatnonzero(sigpipe_streams & ~is_bad_stream & (g_end > g_start)).tolist():
            orig = gs.orig[int(g_start[j]) : int(g_end[j])]
            # (before the failed write: a handler's re-raise after it is no work)
            failed_write = np.flatnonzero(isin(orig, sigpipe_rows))
            if len(failed_write):
                orig = orig[: int(failed_write[0])]
            ok = np.flatnonzero((orig >= 0) & (p.errno[np.maximum(orig, 0)] < 0))
            if not len(ok):
                continue
            last_tok = gs.tok[int(g_start[j]) + int(ok[-1]) : int(g_start[j]) + int(ok[-1]) + 1]
            role = matched_role[j]
            cut_points[role] = np.concatenate([cut_points[role], last_tok]) if role in cut_points else last_tok
        regions = _beyond_cut_off(regions, bs, bh, gh, (b_start, b_end), (g_start, g_end), open_end, b_cls,
                                  matched_role, all_open, cut_points)
    if len(regions) and teardown.any_bad:
        regions = teardown.past_bad_cut(regions, bs, explained, novel, b_cls, seq_rows, _unwind_cleanups(p, bs))
    if len(regions) and teardown.any_bad:
        regions = teardown.past_every_good_cut(regions, bs, gs, b_start, (g_start, g_end), b_cls,
                                               matched_role, seq_rows)
    # A bad thread SIGPIPE killed, in a run exiting as the good runs did: how far it got before
    # its reader left is timing -- its error-free end, of calls the good runs made, drops out
    if len(regions) and same_exit and (sigpipe_streams & is_bad_stream).any():
        to_end = (regions.end == b_end[regions.sid] - 1) & sigpipe_streams[regions.sid]
        keep_r = ~(to_end & _known_and_error_free(regions, b_cls, novel))
        if not keep_r.all():
            regions = align.Regions(regions.start[keep_r], regions.end[keep_r], regions.sid[keep_r])

    # A region opening with known turns of a loop in a new order, then a new event or an error,
    # opens at that event (unless the run's closing message is its thread's)
    regions = _loop_turns_before_divergence(p, bs, regions, explained, novel, b_cls, message_row)

    anomalies: list[dict[str, Any]] = []
    first_unexplained = None
    b_oc = np.where(bs.orig >= 0, outcome_change[np.maximum(bs.orig, 0)], False) & (b_cls > 0)
    # two outcome changes a re-join apart are two anomalies (see align.split_between_outcome_changes)
    regions, split_from_next = align.split_between_outcome_changes(regions, explained, b_oc)
    if len(regions) and len(idem_mkdir):
        # An idempotent mkdir the thread's divergence follows within a window (the path was
        # a file, not a directory: mkdir -p and makedirs fail right after their check) is
        # that divergence's cause: its EEXIST is an outcome change again.
        plain = same_exit & _known_and_error_free(regions, b_cls, novel)
        _idem_mkdir_causes(bs, regions, idem_mkdir[idem_mkdir < nb], b_cls, b_oc, k, plain)
    if len(regions):
        max_cls = regions.max_over(b_cls)
        has_novel = regions.max_over(novel)
        recovered = regions.end < b_end[regions.sid] - 1
        for r in np.flatnonzero(split_from_next)[::-1].tolist():  # (a part counts as its last part does)
            recovered[r] = recovered[r + 1]
        # Each region is named by its outcome change if any, else its most severe error, else
        # its first event; scored by that event.
        fallback = _fallback_lookups(p, bs, b_oc & (b_cls == 1), novel)
        fallback_answers = _fallback_answers(p, bs, fallback)
        b_oc &= ~fallback
        weight = b_cls + b_oc.astype(np.int8) * 4
        weight[fallback] = 0
        # A message catalog not found (gettext's LC_MESSAGES/*.mo lookups, made to translate
        # a message about to be printed) says a message comes, not what went wrong: it does
        # not name its region (bash refusing to clobber a file: the stat that found it does).
        catalog = _catalog_lookups(p, bs)
        weight[catalog & (b_cls == 1) & ~b_oc] = 0
        _known_errors_after_new(regions, novel, b_cls, b_oc, weight)
        max_weight = regions.max_over(weight)
        named = regions.start.copy()
        # Of a region's errors of equal weight, the first whose call and errno no good run met
        # names it: cp's FICLONE ioctl fails EXDEV on every file it copies across file systems
        # (routine at the good runs' paths, new only at the bad run's new file), the write's
        # ENOSPC right after it on that file is the fault (set 54: named by the ioctl whenever
        # no later file met the full disk)
        routine = _errors_good_runs_met(p, bs, nb) & ~b_oc  # (an outcome change is never routine: the
        # EEXIST of a makedirs that met a file in its directory's place, tests/test_diff_mkdir_races.py)
        for r in np.flatnonzero(max_weight > 0):
            lo = int(regions.start[r])
            at = np.flatnonzero(weight[lo : regions.end[r] + 1] == max_weight[r])
            fresh = at[~routine[lo + at]]
            named[r] = lo + int((fresh if len(fresh) else at)[0])
        _first_of_cascade(p, bs, regions, named, b_cls, b_oc)
        _killed_threads(p, bs, regions, named, max_weight, recovered, has_novel, b_end)
        if exit_changed and message_row >= 0:
            _silent_before_reported(p, bs, regions, named, (weight, max_weight), message_row, timing_codes, noise)
        _raised_signals(p, bs, regions, named, max_cls, b_end)
        named_cls, named_oc = b_cls[named], b_oc[named]
        # A region that opens with a message catalog lookup reports the error the thread met
        # just before it, even one the good runs met as well and got past (cp --reflink=always:
        # FICLONE's EOPNOTSUPP, routine for --reflink=auto): that error names it.
        reported = np.full(len(named), -1, dtype=np.int64)
        for r in np.flatnonzero(catalog[regions.start] & (named == regions.start)).tolist():
            reported[r] = _reported_error(p, bs, int(regions.start[r]), timing_codes, noise)
            if reported[r] >= 0:
                named_cls[r] = _error_class(p.errno_values[p.errno[reported[r]]])
        # A region named by an error-free event (its only errors message catalogs), in which the thread
        # goes on to translate a message (a catalog lookup) in a run exiting with another
        # status: the message reports the call that failed right before the lookup, even an
        # error routine elsewhere -- ENOTTY from the TCGETS of `stty -F` on a path that is no
        # terminal (isatty probes on stdio are routine), the only sign of what went wrong.
        if message_row >= 0:
            for r in np.flatnonzero((named_cls == 0) & ~named_oc & (reported < 0)).tolist():
                lo, hi = int(regions.start[r]), int(regions.end[r]) + 1
                at = np.flatnonzero(catalog[lo:hi])
                if len(at) and _near(p, message_row, bs, lo + int(at[0]), 4 * k):
                    reported[r] = _reported_error(p, bs, lo + int(at[0]), waits_codes, noise)
                    if reported[r] >= 0:
                        named_cls[r] = _error_class(p.errno_values[p.errno[reported[r]]])
        # A region named by an error-free event near the message a run exiting with another
        # status ends with, where the message follows a failed call the allowlist set aside at a
        # call site no good run has (a glob covered a path none of them touched): the message
        # reports that call (`_allowlisted_cause`: the HCA a config names missing under
        # /sys/class/infiniband, whose optional attributes are routine misses).
        # Such a cause makes its region no reordering, even when its events are all known ones
        # in another order (the failed call is one the good runs made and got past, fewer times:
        # see _new_pathless_errors).
        caused = np.zeros(len(named), dtype=bool)

        def report_causes(candidates: np.ndarray, find: Callable[[int], int]) -> None:
            """`find` the call each candidate region's message or path reports; it names the region."""
            for r in np.flatnonzero(candidates).tolist():
                reported[r] = find(r)
                if reported[r] >= 0:
                    named_cls[r] = _error_class(p.errno_values[p.errno[reported[r]]])
                    caused[r] = True

        if exit_changed:
            report_causes((named_cls == 0) & ~named_oc & (reported < 0),
                          lambda r: _allowlisted_cause(p, bs, int(named[r]), message_row, (good_calls, new_pathless),
                                                       waits_codes, noise, k))
        # A region named by a message whose text quotes the error of the call that failed right
        # before it in its thread ("write stdout: Resource temporarily unavailable" after a
        # non-blocking write's EAGAIN): the program says that call is why, whatever the
        # allowlist or the timing errnos make of it, and whether or not the run's exit shows it
        # (a pipeline's stage exiting 1 under a shell that exits 0).
        report_causes((named_cls == 0) & ~named_oc & (reported < 0),
                      lambda r: _quoted_error(p, int(bs.orig[named[r]]), nb, noise))
        # A region named by an error-free event near the message (or exit) of a run exiting with
        # another status, right after a call without a path the thread gave up retrying (see
        # _pathless_retries_given_up): the message reports that call, a contention errno the
        # good runs met and got past (io_setup EAGAIN at the last depth an engine would halve to).
        if given_up.any():
            report_causes((named_cls == 0) & ~named_oc & (reported < 0),
                          lambda r: _given_up_cause(p, bs, int(named[r]), message_row, given_up, noise, k))
        # A region named by an event at the path a fallback lookup answered with (or under it,
        # a directory), no hard error nor outcome change of its own: the program went on from
        # the other place -- the fallback's soft error is why (`_fallback_cause`: gcc's TMPDIR
        # under a stray file, then /tmp; cc1's work on /tmp/cc*.s never re-joins the good runs')
        if fallback_answers:
            report_causes((named_cls < 2) & ~named_oc & (reported < 0),
                          lambda r: _fallback_cause(p, int(bs.orig[named[r]]), fallback_answers))
        # A region named by an error-free event right after a full descriptor table its thread
        # made room in, a limit no good run met (`_room_made_cause`): that error names it.
        if len(room_first_met):
            report_causes((named_cls == 0) & ~named_oc & (reported < 0),
                          lambda r: _room_made_cause(p, bs, int(named[r]), room_first_met, noise))
        score = (np.array([SEVERITY[int(c)] for c in named_cls]) + np.where(named_oc, OUTCOME_CHANGE_BONUS, 0.0)
                 + np.where(recovered, 0.0, NOT_RECOVERED_BONUS))
        # A hard error at a call without a path (accept EMFILE, a fork's EAGAIN under a limit)
        # can be no outcome change -- call sites are keyed by path -- yet fails its process the
        # way one does: it too makes the peers' "other end gone" errors consequences.
        named_rows = bs.orig[named]
        pathless = (named_rows >= 0) & (p.plainpath[np.maximum(named_rows, 0)] < 0)
        # So can a soft error where the good runs succeeded (an outcome change) after which its
        # thread ended within k events -- the process went from its error to its exit, the
        # way grep -f exits 2 on a missing pattern file: its exit re-joins the good runs'
        # (recovered), yet the pipe's reader is gone.
        exited = named_oc & (max_cls > 0) & (b_end[regions.sid] - 1 - regions.end <= k)
        _demote_consequences(p, bs, named, regions.end, max_cls, recovered, b_start, score,
                             ((named_cls == 2) & (named_oc | pathless)) | exited, _killed(p, bs, named, recovered),
                             outcomes)
        del named_rows, pathless
        # A writer killed by SIGPIPE in a run exiting otherwise is its reader's consequence:
        # ranked as a soft error, below the cause (a pipeline's reader that had read enough,
        # then the run's real failure after it)
        if len(bad_sigpipe):
            at = isin(bs.orig[named], bad_sigpipe)
            score[at] = np.minimum(score[at], SEVERITY[1] + NOT_RECOVERED_BONUS)
        # Known events in another order, re-joining good behaviour: timing, not a divergence.
        reorder = (max_cls == 0) & recovered & ~has_novel
        # So is a region re-joining good behaviour whose only new events are successes where
        # every good run failed softly (a file an earlier run left: rm -f finds and removes
        # it): the machine's state, handled the way the good runs went on.
        # Known events in another order up to the end of the thread: see _reordered_at_end.
        at_end = np.flatnonzero((max_cls == 0) & ~recovered & ~has_novel)
        if len(at_end):
            reorder[at_end] = _reordered_at_end(p, regions.sid[at_end], bs, gs, (b_start, b_end), (g_start, g_end),
                                                matched_role, s_tkey, bool(same_exit))
        # So are a pool thread's, when its only errors are ones the good runs had at the same call
        # with the same errno (no outcome change), in a run exiting as they did: which worker of a
        # pool takes which task is the scheduler's, so the window after such an error is a random
        # neighbour and `_known_errors_gone_on` cannot vouch for it (npm reads its config layers
        # on libuv's pool: a project .npmrc missing in this run and in one good run, on another
        # worker there; real set 76), re-joining the good runs or not (a worker's stream ends
        # with whichever task it took last). Such an error may be a new token while a known call: a miss
        # before a later layer's hit reads as a search walk's (`<search>/.npmrc`), where the good
        # run that missed both layers kept the path.
        if same_exit:
            pooled = _pool_streams(s_tkey, matched_role, is_bad_stream)[regions.sid]
            if pooled.any():
                known = known_error_pos.copy()
                errs = np.flatnonzero((b_cls > 0) & ~known)
                known[errs] = _errors_good_runs_met(p, bs, nb, errs, at_path=True)
                new = novel & ~known & (bs.orig >= 0)  # (END: a worker that took fewer tasks)
                only_known = (regions.max_over(np.where(known, 0, b_cls)) == 0) & ~regions.max_over(new)
                reorder |= pooled & only_known
        # A process every good run has is missing: known events in another order in the thread
        # that would have started it are where the run went another way (make finding an
        # earlier run's output up to date and skipping the recipe), not timing.
        missing = _missing_roles(s_tkey, s_rolekey, matched_role, is_bad_stream, len(good_ids))
        parents = {rk.rsplit("/", 1)[0] for rk in missing if "/" in rk}
        reorder &= ~np.array([matched_role[int(j)] in parents for j in regions.sid], dtype=bool)
        state = (max_cls == 0) & recovered & has_novel
        if state.any():
            flips = _found_where_good_missed(p, bs, novel, good_calls, good_ok_calls, n_errnos,
                                             good_outcomes)
            others = regions.max_over(novel & ~flips)
            state &= ~others
            # ... and only when, without those successes, the thread did what the good runs did
            # and nothing else in the run is anomalous (a stale done-marker found makes a job
            # skip work: the thread's own events may look the same -- fork, wait, fork, wait --
            # while the process it skipped is missing).
            if not (~reorder & ~state).any() and not missing:
                for r in np.flatnonzero(state).tolist():
                    reorder[r] = _explained_without(bs, gh, role_hash, k, int(regions.start[r]), int(regions.end[r]),
                                                    np.flatnonzero(flips), (b_start, b_end), int(regions.sid[r]))
        # A region whose only new events are lookups of names no good run looked up, each one
        # more turn of the loop before it (df's statfs of another session's mount), re-joining
        # good behaviour in a run exiting as the good runs did: the host's listing is longer.
        if not exit_changed:
            reorder |= (max_cls == 0) & recovered & has_novel & _extra_entries(p, bs, regions, novel)
        # A region whose only new events are descriptors plumbed (a pipe made, dup2'd onto a
        # child's stdin before its exec, closed), re-joining good behaviour in a run exiting as
        # the good runs did: which descriptor a child got is timing (see _descriptor_plumbing).
        if same_exit:
            reorder |= (max_cls == 0) & recovered & has_novel & _descriptor_plumbing(p, bs, regions,
                                                                                      novel)
            # ... or whose only new events reset a path's attributes right after the thread's
            # check of that path found them off: the check is the good runs' too, what it found
            # is timing (see _attributes_retouched).
            reorder |= (max_cls == 0) & recovered & has_novel & _attributes_retouched(p, bs, regions,
                                                                                       novel)
        # A region whose only difference from the good runs is sleeping (its calls without its
        # sleeps have only windows the good runs have), in a run exiting as they did: a backoff
        # slept as often as the machine was slow (see _only_slept).
        if same_exit:
            reorder |= _only_slept(p, (bs, gs), regions, max_cls, gh, role_hash, k,
                                   ((b_start, b_end), (g_start, g_end)), (matched_role, is_bad_stream))
            # ... or doing, once more, a step the good runs made on another of their threads (see
            # _known_step_elsewhere: the JVM's VM Thread recounting the CPUs as its GC grows)
            if (max_cls == 0).any():
                reach = teardown.good_reach(bs, gs, (b_start, b_end), (g_start, g_end), matched_role, seq_rows)
                reorder |= _known_step_elsewhere((bs, gs), regions, max_cls, novel, gh, role_hash, k,
                                                 (b_start, b_end), reach)
        # A call the diffed run's environment refused, whose role the thread gave to another
        # means before going on with the good runs' work, in a run exiting as they did: the same
        # work by another route (see _recovered_fallbacks), listed with the reorderings.
        if same_exit and (max_cls > 0).any():
            reorder |= _recovered_fallbacks(p, rows, bs, regions, named, b_cls, novel, recovered, nb,
                                            load_fallbacks(), _GoodMessages(good, nb))
        # An error-free region right after a wait that timed out (see _TimedOutWaits) is no
        # reordering even when its events are known ones (the close and exit path every run has):
        # it is named by the timeout.
        timed_out = timeouts.openings(bs, regions, b_start, seq_rows, matched_role, k, max_cls == 0)
        # ... unless the program waits on its own timers (the good runs' waits of the role
        # expired too) and the region is known events in another order re-joining the good
        # runs, in a run exiting as they did: the timer came due later, the loop went on as theirs
        if same_exit:
            timed_out[reorder & ~has_novel & timeouts.on_timers(timed_out, matched_role)] = -1
        # ... and so is one after a first read or listing that came back empty where the good
        # runs' had content (see _EmptyAnswers), within 4k events: the program may first do
        # what every run does with what it read (open its output, write its header) before
        # the emptiness shows. It is named by that call.
        empty = empties.openings(bs, regions, b_start, seq_rows, matched_role, k, (max_cls == 0) & (timed_out < 0),
                                 reach=4 * k)
        timed_out = np.where(timed_out >= 0, timed_out, empty)
        # ... and so is one of a sender that never re-joins the good runs right after a checked
        # kill no good run of its role sent (see _KillsOnlyHere): named by the kill.
        killed = kills.openings(bs, regions, b_start, seq_rows, matched_role, k,
                                (max_cls == 0) & ~recovered & (timed_out < 0))
        timed_out = np.where(timed_out >= 0, timed_out, killed)
        timed_out[reported >= 0] = -1
        reorder &= (timed_out < 0) & ~caused
        score[reorder] = REORDER_SCORE
        # A process's error-free divergence right after it reaped a child whose run failed (a
        # tool's error, then the shell's set -e exit instead of its next command) is that
        # failure's consequence: it ranks below the child's error (`_after_failed_child`).
        _after_failed_child(p, bs, regions, named, (named_cls == 0) & ~named_oc & (reported < 0) & ~reorder,
                            (max_cls > 0) & ~reorder & (b_end[regions.sid] - 1 - regions.end <= k), score, b_start,
                            outcomes, nb, k)
        named_seq = _seq_of(bs, named, seq_rows)
        _first_of_repeats(p, bs, regions, named, (named_cls > 0) & ~reorder & (reported < 0), score)
        # A region named by the last turn of a search walk that found nothing is reported at the
        # walk's first turn no good run missed: what the program asked for (_first_of_failed_walk)
        walk_cache: dict[str, Any] = {}
        for r in np.flatnonzero((named_cls > 0) & (reported < 0) & (timed_out < 0)).tolist():
            reported[r] = _first_of_failed_walk(p, int(bs.orig[named[r]]), nb, walk_cache)
        order = np.lexsort((named_seq, -score))
        if (~reorder).any():
            first_unexplained = int(_seq_of(bs, regions.start[~reorder], seq_rows).min())
        order, repeat_counts, repeated_in = _fold_sibling_repeats(
            p, bs, order, named, np.where(reported >= 0, reported, timed_out), reorder, regions.sid, (s_rolekey, s_role))
        folded = len(regions) - len(order)
        for rank, r in enumerate(order[:max_anomalies], start=1):
            sid = int(regions.sid[r])
            pos, start = int(named[r]), int(regions.start[r])
            ev = _event(rows, bs, pos)
            ev_seq = int(named_seq[r])
            if reported[r] >= 0:
                ev, ev_seq = rows.event(int(reported[r])), int(p.seq[reported[r]])
            elif timed_out[r] >= 0:
                # an error-free divergence right after a wait that timed out: the timeout is
                # where the run left the good runs' way (what follows is the program's reaction)
                ev, ev_seq = rows.event(int(timed_out[r])), int(p.seq[timed_out[r]])
            elif (message_row >= 0 and catalog[pos]
                    and (said := _message_translated(p, bs, pos, int(b_end[sid]), novel, 4 * k)) >= 0):
                # the run exits with another status: the message the lookup translated says why
                ev, ev_seq = rows.event(said), int(p.seq[said])
            elif (message_row >= 0 and (_says_nothing(ev) or catalog[pos])
                    and _near(p, message_row, bs, pos, 4 * k)):
                # the run exits with another status: what it wrote last says why
                ev, ev_seq = rows.event(message_row), int(p.seq[message_row])
            elif (message_row >= 0 and named_cls[r] == 0 and not named_oc[r] and not recovered[r] and not novel[pos]
                    and _message_after(p, bs, message_row, start, seq_rows) and _threaded(p, bs, pos, b_start, nb)):
                # the run exits with another status after known events in another order in a
                # process whose threads hand input and output back and forth (how far the main
                # thread reads ahead of its workers is timing): the message it ends with says why
                ev, ev_seq = rows.event(message_row), int(p.seq[message_row])
            elif (message_row >= 0 and max_cls[r] == 0 and not recovered[r]
                    and _search_went_on(p, bs, pos) and _message_after(p, bs, message_row, start, seq_rows)):
                # the run exits with another status after its search went on past where the good
                # runs' stopped (a module left out: the import system's listings find it nowhere,
                # so it stats the next directory of its path): the search found nothing, and the
                # message it ends with says what was not found
                ev, ev_seq = rows.event(message_row), int(p.seq[message_row])
            elif (message_row >= 0 and max_cls[r] == 0 and not recovered[r]
                    and _source_reread(p, bs, pos, int(b_start[sid]))
                    and _message_after(p, bs, message_row, start, seq_rows)):
                # the run exits with another status, its thread reopening a file it had read
                # before (a traceback quoting the script's source lines) and then writing its
                # message: the reread is the message being composed, the message says why
                ev, ev_seq = rows.event(message_row), int(p.seq[message_row])
            elif message_row >= 0 and max_cls[r] == 0 and _leftover_then_message(
                    p, bs, gh, role_hash, k, (start, int(regions.end[r]), pos), message_row, (b_start, b_end), sid,
                    (good_calls, good_ok_calls, n_errnos, good_outcomes)):
                # a file an earlier run left, read, then the good runs' work, then the message the
                # run exits with: the message says why, not the leftover
                ev, ev_seq = rows.event(message_row), int(p.seq[message_row])
            last_common = [rows.event(q) for q in _rows_before(p, kept_bits, bs, start, int(b_start[sid]), context)]
            candidates = np.array(
                [j for j in range(n_streams)
                 if not is_bad_stream[j] and matched_role[j] == matched_role[sid] and g_end[j] > g_start[j]],
                dtype=np.int64,
            )
            before = None if start == b_start[sid] else bh[start - 1]
            rel = (start - b_start[sid]) / max(b_end[sid] - b_start[sid], 1)
            lead_call = p.call_keys(bs.orig[pos : pos + 1])[0] if bs.orig[pos] >= 0 else None
            g = align.anchor_in_good(before, rel, gs, gh, g_start, g_end, candidates, p.call_keys, lead_call)
            good_instead = []
            if g is not None and g < len(gs):
                gsid = int(gs.sid[g])
                for q in range(g, min(g + context, len(gs))):
                    if int(gs.sid[q]) != gsid:
                        break
                    good_instead.append(_event(rows, gs, q))
            # a cause reported from another stream (a fallback in the parent) is shown in its role
            role = s_role[sid] if reported[r] < 0 else s_role[
                int(np.searchsorted(stream_first_rows, reported[r], side="right")) - 1]
            proc = {"pid": ev["pid"], "tid": ev["tid"], "comm": ev["comm"], "role": role}
            path, npath, other = ev["path"], ev["npath"], ev["path2"]
            if other is not None and _blames_target(p, int(bs.orig[pos]), nb, ev["probe"], ev["errno"], (path, other)):
                path, npath, other = other, _normalised(p, other), path
            # What the bad run printed from here on; after a content-free call (getpid...),
            # also the next event that says something.
            next_event = None
            if ev["errno"] is None and ev["path"] is None and ev["seq"] is not None and not ev.get("output"):
                shown = int(reported[r]) if reported[r] >= 0 else int(timed_out[r])
                if shown >= 0:
                    # an event shown in place of the region's (a wait that timed out): the next
                    # recorded events of its own thread
                    end = stream_first_rows[np.searchsorted(stream_first_rows, shown, side="right")] if (
                        shown < stream_first_rows[-1]) else n_rows
                    after = (rows.event(q) for q in range(shown + 1, min(int(end), shown + 1 + 4 * k)))
                else:
                    after = (_event(rows, bs, q) for q in range(pos + 1, min(int(b_end[sid]), pos + 1 + 4 * k)))
                for cand in after:
                    if cand["seq"] is not None and (cand["errno"] or cand["path"] or cand.get("output")):
                        next_event = _strip(cand)
                        break
            anomalies.append(
                {
                    "rank": rank,
                    "score": float(score[r]),
                    "kind": "reordering" if reorder[r] else ("error" if max_cls[r] else "divergence"),
                    "probe": ev["probe"],
                    "errno": ev["errno"],
                    "path": path,
                    "npath": npath,
                    "path2": other,
                    "then_wrote": rows.output_after(nb, ev_seq, ev["pid"]),
                    "next_event": next_event,
                    "timed_out_ms": timeouts.waited.get(int(timed_out[r])) if timed_out[r] >= 0 else None,
                    "empty_answer": bool(empty[r] >= 0 and timed_out[r] == empty[r]),
                    "process": proc,
                    "position": ev_seq,
                    "recovered": bool(recovered[r]),
                    "unexplained_events": int(regions.end[r] - regions.start[r] + 1),
                    "last_common": [_strip(e) for e in last_common],
                    "good_instead": [_strip(e) for e in good_instead],
                    "repeats": repeat_counts.get(int(r), 0),
                    "repeated_in": repeated_in.get(int(r), [])[:REPEATED_IN_SHOWN],
                    # (for _cause_in_another_process, removed below)
                    "_row": int(bs.orig[pos]) if reported[r] < 0 and timed_out[r] < 0 else -1,
                    "_good_npaths": {e["npath"] for e in good_instead if e.get("npath")},
                }
            )
    reorderings = [a for a in anomalies if a["kind"] == "reordering"]
    anomalies = [a for a in anomalies if a["kind"] != "reordering"]
    _cause_in_another_process(p, nb, anomalies)
    if anomalies and anomalies[0]["errno"] in MISSING_NAME_ERRNOS and anomalies[0]["path"]:
        # a name not found under a directory whose listing came back empty (see _empty_listing_cause)
        hit = _empty_listing_cause(p, empties, matched_role, anomalies[0])
        if hit >= 0:
            ev = rows.event(hit)
            anomalies[0].update(probe=ev["probe"], errno=None, path=ev["path"], npath=ev["npath"], path2=ev["path2"],
                                position=ev["seq"], then_wrote=rows.output_after(nb, ev["seq"], ev["pid"]),
                                next_event=None, empty_answer=True, process={**anomalies[0]["process"],
                                "pid": ev["pid"], "tid": ev["tid"], "comm": ev["comm"]})
    for a in anomalies + reorderings:
        del a["_row"], a["_good_npaths"]
    count = int((~reorder).sum()) - folded if len(regions) else 0

    # Roles every good trace has and the bad trace lacks.
    for rk in _missing_roles(s_tkey, s_rolekey, matched_role, is_bad_stream, len(good_ids)):
        count += 1
        if len(anomalies) < max_anomalies:
            anomalies.append(
                {
                    "rank": len(anomalies) + 1, "score": SEVERITY[0], "kind": "missing_process",
                    "probe": MISSING_PROBE, "errno": None, "path": None, "npath": None, "path2": None,
                    "then_wrote": None, "next_event": None,
                    "process": {"pid": None, "tid": None, "comm": _role_comm(p, gs, (g_start, g_end), s_rolekey, rk),
                                "role": rk},
                    "position": -1, "recovered": False, "unexplained_events": 0,
                    "last_common": [], "good_instead": [],
                }
            )

    if exit_changed and anomalies and anomalies[0]["kind"] == "divergence" and anomalies[0]["errno"] is None:
        # The run exits with another status after an error-free divergence: when, before it, the
        # process found a file where the good runs found nothing, under a name the good runs
        # found elsewhere (a stale copy first in LD_LIBRARY_PATH or PATH), that copy is why.
        hit = _shadowing_find(p, nb, anomalies[0], good_calls, good_ok_calls, n_errnos, good_outcomes)
        if hit >= 0:
            ev = rows.event(hit)
            anomalies[0].update(probe=ev["probe"], errno=None, path=ev["path"], npath=ev["npath"], path2=ev["path2"],
                                position=ev["seq"], then_wrote=rows.output_after(nb, ev["seq"], ev["pid"]),
                                next_event=None)
    if exit_changed and not count:
        count = 1
        warnings.append(f"exit status {sorted(bad_status)[0]}, where the good runs exited "
                        f"{', '.join(map(str, sorted(good_status)))}")
        anomalies.append(_exit_anomaly(p, rows, nb, message_row, context, noise))

    for rank, a in enumerate(anomalies + reorderings, start=1):
        a["rank"] = rank
        a.setdefault("repeats", 0)
        a.setdefault("repeated_in", [])
    return DiffReport(
        anomalies=anomalies,
        reorderings=reorderings,
        anomaly_count=count,
        first_unexplained=first_unexplained,
        expected_ignored={"total": int(sum(v["count"] for v in by_entry.values())), "by_entry": by_entry},
        good_traces=good_ids,
        bad_trace=bad_ids[0],
        events={"good": n_rows - nb, "bad": nb},
        settings={
            "k": k,
            "learn": learn,
            "allowlist": allow.source,
            "learned_entries": len(learned),
            "elapsed_s": round(time.perf_counter() - t0, 4),
        },
        warnings=warnings,
    )


def _compressed_and_hashed(s: align.Streams, role_hash: np.ndarray, k: int) -> tuple[align.Streams, np.ndarray]:
    """The bad side's streams with their loops compressed (in place: `s` is a view handed
    over) and their window hashes."""
    s = align.compress_loops([s])
    return s, align.window_hashes(s, role_hash, k)


def _cut_off_streams(p: Prepared, s_tkey: np.ndarray, bad_cut: frozenset[int],
                     good_cut: list[frozenset[int]]) -> np.ndarray:
    """Per stream: was its thread cut off by the end of its recording (tid in its trace's
    CUT_OFF_KEY)?"""
    out = np.zeros(len(s_tkey), dtype=bool)
    if not bad_cut and not any(good_cut):
        return out
    tids = np.asarray(p.tid[stream_starts(p)])
    for j, (t, tid) in enumerate(zip(s_tkey.tolist(), tids.tolist(), strict=True)):
        out[j] = tid in (bad_cut if t < 0 else good_cut[t])
    return out


def _beyond_cut_off(regions: align.Regions, bs: align.Streams, bh: np.ndarray, gh: np.ndarray, b_bounds: tuple,
                    g_bounds: tuple, open_end: np.ndarray, b_cls: np.ndarray,
                    matched_role: list[str] | None = None, all_open: dict[str, bool] | None = None,
                    cut_points: dict[str, np.ndarray] | None = None) -> align.Regions:
    """Drop the error-free regions that run to the end of a bad thread from the very point
    where a good run's recording of that thread (same role: window hashes carry it) was cut
    off: the good run says nothing past there, so the bad thread's further calls or its end
    ((end of thread)) are no evidence either way. A bad thread ending (or going on) where
    a good run's record continues is still reported; a cut-off bad thread has no end token
    (align.with_end_tokens), so its stream merely stops. When every good run's thread of the
    role was cut off, a bad thread that passed, anywhere before such a region, the point where
    one of them was cut is past it too (no good run saw that role's end); for a thread cut by
    a teardown, the point is where it stood when the signal came (`cut_points`: the token of
    its last call before it)."""
    (b_start, b_end), (g_start, g_end) = b_bounds, g_bounds
    good_open = np.flatnonzero(open_end & (g_end > g_start))
    if not len(good_open):
        return regions
    last_windows = gh[g_end[good_open] - 1]
    keep = np.ones(len(regions), dtype=bool)
    to_end = (regions.end == b_end[regions.sid] - 1) & (regions.start > b_start[regions.sid])
    for r in np.flatnonzero(to_end).tolist():
        start, end, sid = int(regions.start[r]), int(regions.end[r]), int(regions.sid[r])
        if b_cls[start : end + 1].any():
            continue
        if bool(isin(bh[start - 1], last_windows)):
            keep[r] = False
        elif all_open is not None and all_open.get(matched_role[sid], False):
            # every good run's thread of this role was cut off: none saw how it ends, so a
            # bad thread that went past where one was cut says nothing new by its end
            passed = bool(isin(bh[b_start[sid] : start], last_windows).any())
            points = (cut_points or {}).get(matched_role[sid])
            if not passed and points is not None:
                passed = bool(isin(bs.tok[b_start[sid] : start], points).any())
            keep[r] = not passed
    if keep.all():
        return regions
    return align.Regions(regions.start[keep], regions.end[keep], regions.sid[keep])


# Errors saying a name is not there: after an empty listing of its directory, a consequence
# (see _empty_listing_cause).
MISSING_NAME_ERRNOS = frozenset({"ENOENT"})


def _threaded(p: Prepared, bs: align.Streams, pos: int, b_start: np.ndarray, nb: int) -> bool:
    """Whether bad position `pos` is in a process the bad run has more than one thread of."""
    at = int(bs.orig[pos])
    if at < 0:
        return False
    heads = unique_ints(b_start[b_start < len(bs)])  # (an empty stream shares the next one's start)
    rows = bs.orig[heads]
    rows = rows[(rows >= 0) & (rows < nb)]
    return int(np.count_nonzero(np.asarray(p.pid[rows]) == int(p.pid[at]))) > 1


def _normalised(p: Prepared, raw: str) -> str | None:
    return normalize_paths(pa.array([raw], type=pa.string()), p.templates)[0].as_py()


def _holds(column: pa.ChunkedArray | pa.Array, word: str) -> bool:
    """Whether some row of a string column is `word`. A dictionary chunk whose dictionary lacks
    the word has no such row: its million indices are not looked at."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    for chunk in chunks:
        if pa.types.is_dictionary(chunk.type) and word not in chunk.dictionary.to_pylist():
            continue
        if word in pc.unique(chunk).to_pylist():
            return True
    return False


def _rows_before(p: Prepared, kept_bits: np.ndarray, bs: align.Streams, start: int, stream_start: int,
                 context: int) -> list[int]:
    """Up to `context` kept rows of the thread right before the region starting at bad position
    `start`, oldest first: the raw rows, not the positions before it -- a loop's later turns
    are compressed out of the streams, so the positions before a region after 20,000 turns are
    the loop's first turn."""
    if start <= stream_start:
        return []
    prev = int(bs.orig[start - 1])
    if prev < 0:
        return []
    tid, tkey = p.tid[prev], p.tkey[prev]

    def same_thread(q: int) -> bool:
        return 0 <= q < len(p) and p.tid[q] == tid and p.tkey[q] == tkey

    row = int(bs.orig[start])
    if row < 0:  # the thread's end: after its last row
        row = prev + 1
        while same_thread(row):
            row += 1
    out: list[int] = []
    q = row - 1
    while same_thread(q) and len(out) < context:
        if (int(kept_bits[q >> 3]) >> (7 - (q & 7))) & 1:
            out.append(q)
        q -= 1
    return out[::-1]


def _errors_good_runs_met(p: Prepared, bs: align.Streams, nb: int, positions: np.ndarray | None = None,
                          at_path: bool = False) -> np.ndarray:
    """Per bad stream position (of `positions`, else every one): an error whose (call, errno)
    some good run also met (at any path), by the codes of the one table. `at_path`: at the same
    recorded path too -- the recorded one, not the normalised: a miss before a later hit reads as
    a search walk's (`<search>/.npmrc`) where a run missing at every place kept the path, so the
    two runs' same miss had two call keys."""
    width = np.int64(len(p.errno_values) + 1)
    if at_path and p.raw_path is None:
        return np.zeros(len(bs) if positions is None else len(positions), dtype=bool)
    path_width = np.int64(len(p.raw_path_values) + 1) if at_path else np.int64(1)

    def keys(rows: np.ndarray) -> np.ndarray:
        call = p.probe[rows].astype(np.int64) * width + p.errno[rows].astype(np.int64)
        return call * path_width + p.raw_path[rows].astype(np.int64) + 1 if at_path else call

    # keyed at the errors only: keys over every event of both runs, and their gathers at the
    # bad streams' positions, were ~20 MiB at 2 x 1M events, the diff's memory peak
    # (bench_diff); `has` gets a False at index -1, where a stream's end marker (orig -1) reads
    has = np.append(p.errno >= 0, False)
    good = unique_ints(keys(np.flatnonzero(has[nb:-1]) + nb))
    orig = bs.orig if positions is None else bs.orig[positions]
    met = has[orig]
    at = np.flatnonzero(met)
    met[at] = isin(keys(orig[at]), good)
    return met


def _event(rows: _Rows, s: align.Streams, pos: int) -> dict[str, Any]:
    orig = int(s.orig[pos])
    if orig >= 0:
        return rows.event(orig)
    prev = int(s.orig[pos - 1]) if pos > 0 else -1
    base = rows.event(prev) if prev >= 0 else {}
    return {
        "seq": None, "probe": END_PROBE, "errno": None, "path": None, "npath": None, "path2": None, "output": None,
        "pid": base.get("pid"), "tid": base.get("tid"), "comm": base.get("comm"),
        "trace_id": base.get("trace_id"),
    }


def default_allowlist_path() -> Path | None:
    from baseline.run.allowlist import DEFAULT_PATH

    return DEFAULT_PATH if DEFAULT_PATH.exists() else None
