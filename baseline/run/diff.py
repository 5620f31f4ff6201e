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
   and getpeername's ENOTCONN (`PEER_QUERY_TIMING`: the peer gone when a program asked).
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
   it (the path was a file): then its EEXIST names that divergence, as an outcome change.
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
set's order under a per-run hash seed), not a thread stopping early. So is a region with no
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
* so does a thread's *first read of a file, or listing of a directory, that came back empty*
  -- read returning 0, getdents64 only "." and ".." -- at a call site (role, call, path) where a
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
and a warning says both statuses; a region named by an event that says nothing (exit_group,
END) or by a message catalog lookup is named by that write instead when it is the same
thread's, within 4k rows before or after; so is an error-free region that never re-joins,
opened by an event the good runs have (known events in another order: xz -T2's main thread
reading ahead of its decoder threads), when the write is its thread's, after its start; and so
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
      "then_wrote": str | null,              # first 256 chars BAD wrote to stdout/stderr/tty/pipe
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

import errno as errno_names
import os
import re
import sys
import time
from dataclasses import dataclass, field
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
    ANALYSIS_COLUMNS,
    PerStream,
    Prepared,
    background,
    code_in,
    codes_where,
    in_sorted,
    isin,
    kept_rows,
    normalize_paths,
    numpy_of,
    stream_rows,
    stream_starts,
    take,
    thread_roles,
    unique_ints,
    view_in,
)
from baseline.run.traces import (
    OUTCOME_COLUMNS,
    EventColumns,
    bad_command_of,
    check_failures_only,
    check_good_commands,
    describe_source,
    exit_statuses,
    load_table,
    number_traces,
    pick_bad_trace,
    prepare_both,
    recording_settings,
    trace_values,
)
from tracer import units
from tracer.errors import TracebaseError, printable

if TYPE_CHECKING:
    from baseline.run.traces import PathsLike

JSON_VERSION = 1
# The longest model window: windows are hashed position by position, so the work grows with k
# (k = 10**8 ran for minutes); stide's useful windows are a handful of events.
MAX_WINDOW = 1000
SOFT_ERRNOS = frozenset(
    {
        "ENOENT", "ENOTDIR", "EAGAIN", "EWOULDBLOCK", "EINTR", "ENOTTY", "ECHILD", "EEXIST",
        "EINPROGRESS", "EALREADY", "ENODATA", "ERANGE", "ESPIPE", "ENOSYS", "ERESTARTSYS",
        "ERESTARTNOINTR", "ERESTARTNOHAND", "ERESTART_RESTARTBLOCK", "ETIMEDOUT", "ESRCH",
    }
)
# Errnos that are one call's answer rather than a failure: readlink's EINVAL says the path is
# no symbolic link (ld canonicalising its output path, which exists: a directory in the run
# that then fails EISDIR at the open -- that open names it, not the answer before it)
ANSWER_ERRNOS = frozenset({("readlink", "EINVAL"), ("readlinkat", "EINVAL")})
SEVERITY = {0: 1.0, 1: 2.0, 2: 4.0}  # no error, soft error, hard error
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
# Reading the kernel's random devices is getrandom by another door: where a reader refills its
# buffer is timing (a JVM's NativePRNG reads /dev/urandom again when its buffer is 100 ms old:
# between two createTempFile names in a slow run, before the first in a fast one). A read that
# fails still counts.
RANDOM_DEVICES = frozenset({"/dev/urandom", "/dev/random"})
RANDOM_READS = frozenset({"read", "pread64", "readv", "preadv", "preadv2"})
# Files the C library's allocator reads once per process, at the first moment it needs them,
# which is timing: glibc's malloc opens, reads and closes /proc/sys/vm/overcommit_memory when a
# thread's arena first gives memory back (check_may_shrink_heap) -- in 13 of 20 runs of pigz
# -p 4 on one input, by whichever worker exits first. Their successful calls drop out (any
# call: open, read, close); a failed one still counts.
ALLOCATOR_FILES = frozenset({"/proc/sys/vm/overcommit_memory"})
# The data files of the run's locale and time zone: which of them a program reads is its
# environment's choice (LANG, LANGUAGE, LC_ALL, TZ), not its behaviour -- good runs recorded
# under LANG=C read no message catalog, one under LANGUAGE=de reads coreutils.mo; one with TZ
# unset reads /etc/localtime, one with TZ=Asia/Tokyo that zone's file. Their successful calls
# drop out (any call); a failed one still counts (a zone file or the locale archive missing).
# Matched on normalised paths ("Etc/GMT+<n>"), in the /usr subset first (a prefix test of every
# distinct path, a regex on the few that pass).
ENVIRONMENT_DATA = re.compile(r"^(?:/usr/share/locale/|/usr/share/locale-langpack/|/usr/lib/locale/|/usr/share/zoneinfo/"
                              r"|/usr/share/i18n/|/usr/lib/[^/]+/gconv/|/usr/lib/gconv/)|^/etc/localtime$")
# Calls that only pass time. A region whose only difference from the good runs is that its
# thread slept (`_only_slept`) is a backoff's timing: HotSpot's VM Thread sleeps 1 ms at a time
# while it waits for the other threads to reach a safepoint, as often as they are slow.
SLEEP_PROBES = frozenset({"nanosleep", "clock_nanosleep"})
# ... and calls that only measure time (the clock, the CPU time used): one more or fewer is a
# timer's timing too -- G1's service thread samples its CPU time (getrusage) at each periodic
# task it runs, none in a run slow enough that the JVM shut down before the first.
TIMING_PROBES = SLEEP_PROBES | {"getrusage", "times", "clock_gettime", "clock_getres", "gettimeofday", "time"}
# How far back past a region `_only_slept` looks for k-1 calls that are no sleeps.
SLEPT_CONTEXT = 64
# The fewest calls of a step a thread repeats that the good runs made on another of the
# program's threads (`_known_step_elsewhere`): one call alone is found anywhere. And the most:
# a step is a few calls (the JVM's CPU count is 9), not a thread's whole other work.
KNOWN_STEP_MIN, KNOWN_STEP_MAX = 2, 64
# EAGAIN from a call that maps memory is no contention but a resource limit: too much memory
# locked (mmap(MAP_LOCKED) over RLIMIT_MEMLOCK, what registering RDMA memory meets). It stays
# in the streams even though EAGAIN is a timing errno elsewhere (futex, a non-blocking read).
MEMORY_LIMIT_PROBES = frozenset({"mmap", "mremap", "mprotect", "brk"})
# Calls that only duplicate a descriptor (a shell setting up `>&2`): error-free, they say a
# redirection is being made, not what went wrong.
DESCRIPTOR_PLUMBING = frozenset({"fcntl", "dup", "dup2", "dup3"})
# Lookups that find a file: a success of one where the good runs failed, at a path whose name
# the good runs found elsewhere in a search path, is another copy shadowing theirs.
FIND_PROBES = frozenset({"open", "openat", "openat2", "execve", "execveat"})
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
# Two-path calls (source, target): which path an errno blames. The target for errors about
# the destination; for ENOENT/ENOTDIR too unless the bad run shows the source itself failing.
TWO_PATH_PROBES = frozenset({"rename", "renameat", "renameat2", "link", "linkat"})
TARGET_ERRNOS = frozenset({"EEXIST", "ENOTEMPTY", "EISDIR", "EACCES", "EPERM", "EROFS", "ENOSPC", "EDQUOT",
                           "EMLINK", "ENOENT", "ENOTDIR", "ELOOP", "ENAMETOOLONG"})
# ... except these, which a two-path call's kernel check raises about its source: link(2)'s
# EPERM comes from may_linkat() on the existing file (fs.protected_hardlinks: not its owner
# and not writable; a directory), never from the new name's directory (that is EACCES).
SOURCE_ERRNOS = {"link": frozenset({"EPERM"}), "linkat": frozenset({"EPERM"})}
OUTPUT_BYTES = 256
# A question about a socket's peer (getpeername) answered ENOTCONN says the peer had already
# gone when the program asked -- the peer's timing, not the program's logic: a server killed
# while its handler thread finishes a request finalises the accepted socket, and Python's
# "unclosed socket" warning asks for the peer's address, in some runs after the handler's
# shutdown() (ENOTCONN) and in others before it or not at all. Dropped like timing noise.
PEER_QUERY_TIMING = (frozenset({"getpeername"}), frozenset({"ENOTCONN"}))
# Errors that say the other end of a pipe or socket went away or is not there: a consequence
# when another process of the same run failed (see _demote_consequences).
PEER_ERRNOS = frozenset({"EPIPE", "ECONNRESET", "ECONNREFUSED", "ECONNABORTED", "ENOTCONN"})
# Errnos of a poll or retry loop: transient when the thread later succeeds at the same call.
RETRY_ERRNOS = SOFT_ERRNOS | {"ECONNREFUSED"}
# How the recorder writes a struct sockaddr (tracer.record.syscalls): the peer of a connect
SOCKET_ADDRESS_PREFIXES = ("inet:", "inet6:", "unix:")
# Errnos of contention (a lock held, a resource busy for now): retried without end at a call the
# good runs got past, they are where the run stopped (see _retries_given_up).
CONTENTION_ERRNOS = frozenset({"EAGAIN", "EWOULDBLOCK"})
GIVE_UP_MIN = 3
# Errnos of a refusal a program falls back from (perf's kernel-time counter refused by
# perf_event_paranoid, retried user-only; SO_RCVBUFFORCE refused, then SO_RCVBUF): at a call
# without a path every good run got past, a bad run whose last attempt was refused too stopped
# there (see _pathless_retries_given_up).
FALLBACK_ERRNOS = frozenset({"EACCES", "EPERM"})
# Errnos of a full descriptor table: a cache that closes an entry and tries again gets past them
# (see _descriptor_room_made).
TABLE_FULL_ERRNOS = frozenset({"EMFILE", "ENFILE"})
# Rows at most between two attempts of a retry loop (a wait, a close, a new socket, ...).
RETRY_GAP = 16
# How far (rows of the stream-ordered table, in the same thread) a cache miss's fill is looked for (see
# _cache_misses_filled): python compiles the module between its bytecode cache's miss and the
# rename onto it, some twenty rows.
CACHE_FILL_ROWS = 64
# The longest gap between two steps of a probe loop looked into for misses (see
# _gaps_past_misses): ld.so's subdirectories of one directory are some forty rows.
WALK_GAP = 256
# Calls a retry loop waits in between attempts.
WAIT_PROBES = frozenset({"nanosleep", "clock_nanosleep", "poll", "ppoll", "select", "pselect6", "epoll_wait",
                         "epoll_pwait", "epoll_pwait2", "wait4", "waitid", "pause", "sched_yield"})
# Waits for a descriptor that take a timeout: one that returned nothing ready after blocking
# timed out -- the peer never answered, the service never accepted (see _TimedOutWaits).
TIMEOUT_WAITS = frozenset({"poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2"})
# ... after blocking this long at least: a zero-timeout poll (a readiness check, curl's
# event loop between transfers) returns 0 within microseconds; a wait for an answer that does
# not come returns 0 when its timeout runs out, tens of milliseconds to seconds later.
TIMED_OUT_MIN_NS = 10_000_000
# ... and a wait returning nothing ready after blocking this long at least is a timer's expiry:
# an event loop sleeping until its next timer (node's setTimeout, libuv's epoll_pwait with the
# time left) returns 0 when the timer is due, a millisecond to seconds later.
TIMER_EXPIRY_MIN_NS = 1_000_000
# Reads of a file and listings of a directory: a thread's first one at a path coming back empty
# (read 0, a listing of nothing but "." and "..") where the good runs' first one there had
# content is a different answer from a successful call (see _EmptyAnswers).
FIRST_READ_PROBES = frozenset({"read", "pread64", "readv", "preadv", "preadv2"})
LISTING_PROBES = frozenset({"getdents64"})
# Calls that look at a file without using it: a sweep of a directory of other processes' files
# (HotSpot's start going through /tmp/hsperfdata_<user>/ for dead JVMs' files) opens, checks
# and tries to lock each entry, and leaves the ones another process holds (see _EmptyAnswers).
LOOK_ONLY_PROBES = frozenset({"openat", "open", "openat2", "newfstatat", "fstat", "statx", "lstat", "stat",
                              "fcntl", "flock", "close", "access", "faccessat", "faccessat2", "readlink",
                              "readlinkat"})
LOCK_PROBES = frozenset({"flock", "fcntl"})
LOCK_HELD_ERRNOS = frozenset({"EAGAIN", "EWOULDBLOCK", "EACCES"})
# An empty directory's listing: "." and "..", one 24-byte struct linux_dirent64 each.
EMPTY_LISTING_BYTES = 48
# Calls that send a signal: a successful one by another process of the run, to threads still
# running at that point, is a teardown (see _Teardowns).
SIGNAL_PROBES = frozenset({"kill", "tkill", "tgkill", "pidfd_send_signal", "rt_sigqueueinfo", "rt_tgsigqueueinfo"})
# A check whether a child has ended: returning 0 (WNOHANG) it is still running.
CHILD_CHECKS = frozenset({"wait4", "waitid"})
# Noise calls (a futex, a signal mask) passed over between a check and its kill, at most.
CHECK_LOOKBACK = 16
# A thread's own end: a stream ending without one was ended from outside (a signal, another
# thread's exit_group).
OWN_END_PROBES = frozenset({"exit", "exit_group"})
# calls whose return value is a new thread's or process's id (see _Teardowns._silent_children)
SPAWN_PROBES = frozenset({"clone", "clone3", "fork", "vfork"})
# Calls that remove a path: a create failing EEXIST, then one of these on its path, then the
# create succeeding, is a file replaced (see _cleared_in_between).
REMOVE_PROBES = frozenset({"unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2"})
# Calls that check what a path is (an idempotent mkdir's check that the path is a directory).
STAT_PROBES = frozenset({"stat", "lstat", "newfstatat", "statx"})
# Calls that write to a descriptor. One failing EPIPE as its thread's last call is the writer
# killed by SIGPIPE: its reader had gone (see _sigpipe_deaths).
WRITING_PROBES = frozenset({"write", "writev", "pwrite64", "pwritev", "pwritev2", "sendto", "sendmsg", "sendmmsg",
                            "splice", "sendfile", "sendfile64", "copy_file_range", "vmsplice", "tee"})
# Calls that plumb descriptors: which descriptor a child's stdin is can be timing (make -j
# gives stdin to one running job at a time, a broken pipe to the others: whether the first
# job has finished when the second starts decides which the second gets -- see
# _descriptor_plumbing). Not fcntl: a lock taken where the good runs took none is no plumbing.
PLUMBING_PROBES = frozenset({"dup", "dup2", "dup3", "pipe", "pipe2", "close"})
# Calls that set a file's attributes (times, mode, owner). One more of them, right after the
# thread's check of the same path, is the check having found the attribute off this time
# (see _attributes_retouched).
ATTRIBUTE_PROBES = frozenset({"utimensat", "futimesat", "utimes", "utime", "chmod", "fchmod", "fchmodat", "fchmodat2",
                              "chown", "fchown", "fchownat", "lchown"})
# Calls that only look a name up (nothing changed, nothing read from the object): one more of
# them in a loop over a listing is the listing being longer (see _extra_entries).
LOOKUP_PROBES = STAT_PROBES | {"statfs", "readlink", "readlinkat", "access", "faccessat", "faccessat2",
                               "getxattr", "lgetxattr"}
# Calls that create the object at their path (open* only with O_CREAT): failing ENOENT, the
# directory they create in is missing (see _parents_made_on_demand).
MADE_IN_PARENT_PROBES = frozenset({"open", "openat", "openat2", "creat", "mkdir", "mkdirat", "mknod", "mknodat"})
MKDIR_PROBES = frozenset({"mkdir", "mkdirat"})
# Nested directories made on demand, innermost first (mkdir -p's walk up): levels at most.
MADE_ON_DEMAND_DEPTH = 8
# A lock or temp file created exclusively and then either published (renamed over its target)
# or discarded (unlinked): see _lock_fates.
CREATE_PROBES = frozenset({"open", "openat", "openat2"})
PUBLISH_PROBES = frozenset({"rename", "renameat", "renameat2"})
DISCARD_PROBES = frozenset({"unlink", "unlinkat"})
# Good streams of the same role compared when deciding a reordering at a thread's end.
MAX_SAME_ROLE = 32
NOT_RECOVERED_BONUS = 1.5
END_PROBE = "(end of thread)"
TEXT_EXPECTED_SHOWN = 8
MISSING_PROBE = "(process missing)"
# A /proc scan (ps, top, pgrep, a monitor) stats /proc/<pid> and reads /proc/<pid>/... for every
# process it listed; one that exits in between gives ENOENT (or ESRCH) there. An error of that form is routine in
# a thread that made the same call for at least PROC_SCAN_MIN different pids; a check of one
# pid (a pid file's daemon) is not a scan: its ENOENT says the daemon is gone.
PROC_PID_PATH = re.compile(r"^/proc/(\d+)(?:/|$)")
PROC_SCAN_ERRNOS = frozenset({"ENOENT", "ESRCH"})
PROC_SCAN_MIN = 3
# A directory walked: one good run made the same call with the same outcome at this many
# names of one directory at least (see _listing_twins)
LISTING_TWINS_MIN = 2
# Calls that list a directory: the start of a sweep over its entries (see _sweep_turns)
LISTING_PROBES = frozenset({"getdents64", "getdents"})
# Where the kernel lists the host's state (interfaces, processes, devices): an entry new there
# is the host's, and so are its files' contents; elsewhere only a new entry's routine errors
# are its siblings' twins (the extra file opened and read stays named: see _extra_entries)
KERNEL_LISTINGS = ("/proc/", "/sys/")
# Errnos that say a candidate is not there: the misses of a loop trying the members of a
# numbered family until one answers (see _probe_misses).
PROBE_MISS_ERRNOS = frozenset({"ENOENT", "ENOTDIR"})
# Calls that write a message out (passed over when looking for the error a message reports).
MESSAGE_WRITES = frozenset({"write", "writev"})
# Calls that give a descriptor back. Two rules pass over them as tidying up, not work: a
# library's clean-up between a failed call and its return with that error (glibc's
# if_nametoindex closes the socket its SIOCGIFINDEX failed on), when looking for the error a
# message reports (_error_before); a fallback's own descriptors closed (_recovered_fallbacks);
# with shutdown, a signal's unwinding giving back what its handler closed (_unwind_cleanups).
# One table: a call that tidies up after an error is the same call that tidies up after a
# fallback (close_range is not here: it closes a range no rule has seen opened).
DESCRIPTOR_RELEASES = frozenset({"close"})
# The longest rest of a region after a refused call that is read event by event as a fallback:
# an alternative and the way back to the good runs' behaviour are a few events, and the rule
# stays off the diff's cost on a long region (a thread that went another way for good).
FALLBACK_TAIL = 256
# gettext's message catalogs, looked up (in each locale directory) to translate a message
MESSAGE_CATALOG = re.compile(r"/LC_MESSAGES/[^/]+\.mo$")
# A message's numbers (pids, sizes, times) vary run to run: compared as <n> (see _GoodMessages)
_DIGITS = re.compile(r"[0-9]+")



@dataclass
class DiffReport:
    """Result of `diff_traces`; `to_dict` gives the documented JSON object."""

    anomalies: list[dict[str, Any]]
    reorderings: list[dict[str, Any]]
    anomaly_count: int
    first_unexplained: int | None
    expected_ignored: dict[str, Any]
    good_traces: list[str]
    bad_trace: str
    events: dict[str, int]
    settings: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    @property
    def anomaly(self) -> bool:
        return self.anomaly_count > 0

    @property
    def bifurcation(self) -> dict[str, Any] | None:
        return self.anomalies[0] if self.anomalies else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": JSON_VERSION,
            "anomaly": self.anomaly,
            "bifurcation": self.bifurcation,
            "first_unexplained": self.first_unexplained,
            "anomalies": self.anomalies,
            "anomaly_count": self.anomaly_count,
            "reorderings": self.reorderings,
            "expected_ignored": self.expected_ignored,
            "good_traces": self.good_traces,
            "bad_trace": self.bad_trace,
            "events": self.events,
            "settings": self.settings,
            "warnings": self.warnings,
        }

    def render_text(self) -> str:
        lines: list[str] = []
        n_good = len(self.good_traces)
        if not self.anomaly:
            lines.append(
                f"no anomaly: {self.bad_trace} ({self.events['bad']} events) is explained by "
                f"{n_good} good trace(s)"
            )
        else:
            b = self.bifurcation
            assert b is not None
            lines.append(f"bifurcation: {_describe(b)}")
            lines.append(f"  {_where(b)}" + ("" if b["recovered"] else ", never re-joins good behaviour"))
            if b["last_common"]:
                lines.append("  last common events:")
                lines += [f"    {_event_line(e)}" for e in b["last_common"]]
            if b.get("next_event"):
                lines.append(f"  then: {_event_line(b['next_event'])}")
            if b.get("then_wrote"):
                cut = f" (its first {OUTPUT_BYTES} characters)" if len(b["then_wrote"]) >= OUTPUT_BYTES else ""
                lines.append(f"  the bad run then wrote{cut}: {_quoted(b['then_wrote'])}")
            if b["good_instead"]:
                lines.append("  good runs did instead:")
                lines += [f"    {_event_line(e)}" for e in b["good_instead"]]
            later = self.anomalies[1:]
            if later:
                lines.append(f"later anomalies (ranked, {self.anomaly_count - 1} in all):")
                for a in later:
                    lines.append(f"  {a['rank']}. [{a['score']:.1f}] {_describe(a)} "
                                 f"({_where(a)})")
        ign = self.expected_ignored
        if ign["total"]:
            lines.append(f"expected errors ignored: {ign['total']}")
            ranked = sorted(ign["by_entry"].items(), key=lambda kv: -kv[1]["count"])
            for eid, info in ranked[:TEXT_EXPECTED_SHOWN]:
                lines.append(f"  {info['count']:>6}  {eid}  ({info['probe']} {info['errno']}"
                             + (f" {info['path']}" if info["path"] else "")
                             + (f" in {info['context']}" if info.get("context") else "") + ")")
            if len(ranked) > TEXT_EXPECTED_SHOWN:
                rest = sum(info["count"] for _, info in ranked[TEXT_EXPECTED_SHOWN:])
                lines.append(f"  {rest:>6}  ... {len(ranked) - TEXT_EXPECTED_SHOWN} more entries (--json lists all)")
        else:
            lines.append("expected errors ignored: 0")
        # one line per line: a path or comm holding a newline or ESC is shown escaped
        return "\n".join(printable(line) for line in lines)


def _quoted(text: str) -> str:
    """Output bytes as one line: JSON string escapes (newlines, control characters)."""
    import json

    return json.dumps(text, ensure_ascii=False)


def _describe(a: dict[str, Any]) -> str:
    if a["kind"] == "missing_process":
        return f"process {a['process']['role']} of the good runs never started"
    out = a["probe"]
    if a["path"]:
        out += f" {a['path']}"
    if a.get("path2"):
        out += f" (other path: {a['path2']})"
    if a.get("timed_out_ms") is not None:
        out += f" (timed out: nothing ready after {a['timed_out_ms']:g} ms, where the good runs' waits were answered)"
    elif a.get("empty_answer"):
        out += " (came back empty: nothing to read, where the good runs' first call there had content)"
    else:
        out += f" -> {a['errno']}" if a["errno"] else " (no error: a path good runs never took)"
    return out


def _where(a: dict[str, Any]) -> str:
    """"process COMM pid P tid T role R, seq S" of an anomaly; a process of the good runs the
    bad run never started has no pid, tid or seq of its own (they read "None" and "-1")."""
    p = a["process"]
    words = [f"process {p['comm']}"] + [f"{k} {_short_role(p[k]) if k == 'role' else p[k]}"
                                        for k in ("pid", "tid", "role") if p.get(k) is not None]
    return " ".join(words) + (f", seq {a['position']}" if a["position"] is not None and a["position"] >= 0 else "")


def _short_role(role: str) -> str:
    """A role as the text report shows it: a run of 3+ equal ancestors as one, with its count
    (a fork chain 200 deep is `chain/chain/.../chain#0`, a line of 2,000 characters; the JSON
    keeps the role whole)."""
    parts = role.split("/")
    out: list[str] = []
    i = 0
    while i < len(parts):
        j = i
        while j + 1 < len(parts) and parts[j + 1] == parts[i]:
            j += 1
        out.append(f"{parts[i]}(x{j - i + 1})" if j - i >= 2 else "/".join(parts[i:j + 1]))
        i = j + 1
    return "/".join(out)


def _event_line(e: dict[str, Any]) -> str:
    s = f"seq {e['seq']}: {e['probe']}" if e["seq"] is not None else e["probe"]
    if e["path"]:
        s += f" {e['path']}"
    if e.get("path2"):
        s += f" {e['path2']}"
    if e["errno"]:
        s += f" -> {e['errno']}"
    if e.get("output"):
        s += f" wrote {_quoted(e['output'][:80])}"
    return s


# ------------------------------------------------------------------------------------------
# the analysis
# ------------------------------------------------------------------------------------------
def _error_class(errno: str | None, probe: str | None = None) -> int:
    """0 no error, 1 soft (SOFT_ERRNOS, or an answer of `probe`'s: ANSWER_ERRNOS), 2 hard."""
    if errno is None:
        return 0
    return 1 if errno in SOFT_ERRNOS or (probe, errno) in ANSWER_ERRNOS else 2


class _Rows:
    """Display of prepared rows (bad rows first, then good rows)."""

    def __init__(self, prep: Prepared, bad_ids: list[str], good_ids: list[str]):
        self.p, self.bad_ids, self.good_ids = prep, bad_ids, good_ids

    def event(self, r: int) -> dict[str, Any]:
        p = self.p
        tkey = int(p.tkey[r])
        errno = p.errno_values[p.errno[r]] if p.errno[r] >= 0 else None
        probe = p.probe_values[p.probe[r]]
        return {
            "seq": int(p.seq[r]), "probe": probe, "errno": errno,
            "path": p.value("path", r), "npath": p.path_string(int(p.pathkey[r])),
            "path2": self.second_path(r, probe),
            "pid": int(p.pid[r]) if p.pid[r] >= 0 else None, "tid": int(p.tid[r]),
            "comm": p.value("comm", r), "trace_id": self.bad_ids[0] if tkey < 0 else self.good_ids[tkey],
            "output": self.p.value("output", r) if "output" in self.p.table.column_names else None,
        }

    def second_path(self, r: int, probe: str) -> str | None:
        """The second path of a two-path call: the events column ``path2`` (schema 2); older
        recordings kept a rename/link target in ``arg``."""
        cols = self.p.table.column_names
        second = self.p.value("path2", r) if "path2" in cols else None
        if second is None and probe in TWO_PATH_PROBES and "arg" in cols:
            arg = self.p.value("arg", r)
            second = arg if isinstance(arg, str) and arg.startswith("/") else None
        return second

    def output_after(self, nb: int, seq: int, pid: int | None) -> str | None:
        """The first OUTPUT_BYTES characters the bad run wrote to stdout/stderr/ttys/pipes from
        `seq` on (the events column ``output``): this process's writes, else any process's."""
        p = self.p
        if "output" not in p.table.column_names:
            return None
        if not hasattr(self, "_has_output"):
            col = p.table.column("output")
            valid = numpy_of(pc.is_valid(col)) if col.null_count < len(col) else np.zeros(len(col), dtype=bool)
            self._has_output = np.flatnonzero(valid[p.order[:nb]]) if valid.any() else np.zeros(0, dtype=np.int64)
        rows = self._has_output
        rows = rows[p.seq[rows] >= seq]
        if pid is not None and (p.pid[rows] == pid).any():
            rows = rows[p.pid[rows] == pid]
        text = ""
        for r in rows[np.argsort(p.seq[rows], kind="stable")].tolist():
            text += p.value("output", r) or ""
            if len(text) >= OUTPUT_BYTES:
                break
        return text[:OUTPUT_BYTES] or None


def _release(p: Prepared, *names: str) -> None:
    """Drop per-row arrays the rest of the diff does not read (display needs seq, probe,
    errno, path key, pid, tid, trace key and the raw path/comm): freed before the window model
    is built. The source order stays, even with no raw column left in `p.table`: the outcome
    columns (ret, latency) are read in source order through it (a trace without arg, path2 and
    output columns, whose listing came back empty, failed on it: an internal error)."""
    for name in names:
        setattr(p, name, None)
    p.table = p.table.select([c for c in ("arg", "path2", "output") if c in p.table.column_names])


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
                             f"a GOOD trace, found {printable(bad_id)!r} among the GOOD traces too (a trace is "
                             "always explained by itself; leave it out of GOOD)")
    good_commands = check_good_commands(good_tab, describe_source(good), mixed, good_codes)
    # a bad trace of another program than the good runs' (`diff ls.parquet job.parquet`): a diff
    # of two programs names a meaningless bifurcation -- said, as the command may differ in
    # arguments only where the tool was called another way
    bad_command = bad_command_of(bad_tab)
    if not mixed and bad_command is not None and bad_command not in good_commands:
        warnings.append(f"the BAD trace ran {printable(bad_command)!r}, the GOOD traces "
                        f"{'; '.join(repr(printable(c)) for c in good_commands[:3])}: a diff of different commands")
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
    retried_done = background().submit(_retried, p, err_rows[isin(p.errno[err_rows], retry_codes)], hard_codes)
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
    settled |= _descriptor_room_made(p, err_any)
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
    peer_query = code_in(probe_e, codes_where(p.probe_values, PEER_QUERY_TIMING[0]),
                         len(p.probe_values)) & code_in(
        errno_e, codes_where(p.errno_values, PEER_QUERY_TIMING[1]), len(p.errno_values))
    drop[err_any] = expected_mask[err_any] | retried[err_any] | peer_query | (
        is_noise[err_any]
        & ((err_cls_rows[err_any] == 0) | (code_in(errno_e, timing_codes, len(p.errno_values)) & ~memory_eagain)))
    del memory_eagain, peer_query, is_noise, probe_e, errno_e, err_any
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

    # Streams and roles (bad streams first).
    s_tkey, s_rolekey, s_role = _stream_roles(p)
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
    # An unexplained event no good stream of its role has at all (only those positions matter).
    unexplained = np.flatnonzero(~explained)
    novel = np.zeros(len(bs), dtype=bool)
    novel[unexplained] = ~_seen_events(bs.take(unexplained), gs, role_hash)
    regions = align.divergence_regions(bs, explained, k)

    seq_rows = p.seq
    b_cls = np.where(bs.orig >= 0, err_cls_rows[np.maximum(bs.orig, 0)], 0) * ~explained
    b_cls[_known_errors_gone_on(bs, known_errors, explained, k, n_rows)] = 0
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
        keep_r = ~(to_end & (regions.max_over(b_cls) == 0) & ~regions.max_over(novel & ~explained))
        if not keep_r.all():
            regions = align.Regions(regions.start[keep_r], regions.end[keep_r], regions.sid[keep_r])

    anomalies: list[dict[str, Any]] = []
    first_unexplained = None
    b_oc = np.where(bs.orig >= 0, outcome_change[np.maximum(bs.orig, 0)], False) & (b_cls > 0)
    if len(regions) and len(idem_mkdir):
        # An idempotent mkdir the thread's divergence follows within a window (the path was
        # a file, not a directory: mkdir -p and makedirs fail right after their check) is
        # that divergence's cause: its EEXIST is an outcome change again.
        _idem_mkdir_causes(bs, regions, idem_mkdir[idem_mkdir < nb], b_cls, b_oc, k)
    if len(regions):
        max_cls = regions.max_over(b_cls)
        has_novel = regions.max_over(novel & ~explained)
        recovered = regions.end < b_end[regions.sid] - 1
        # Each region is named by its outcome change if any, else its most severe error, else
        # its first event; scored by that event.
        fallback = _fallback_lookups(p, bs, b_oc & (b_cls == 1), novel & ~explained)
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
        for r in np.flatnonzero(max_weight > 0):
            seg = weight[regions.start[r] : regions.end[r] + 1]
            named[r] = regions.start[r] + int(np.argmax(seg == max_weight[r]))
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
        if exit_changed:
            for r in np.flatnonzero((named_cls == 0) & ~named_oc & (reported < 0)).tolist():
                reported[r] = _allowlisted_cause(p, bs, int(named[r]), message_row, (good_calls, new_pathless),
                                                 waits_codes, noise, k)
                if reported[r] >= 0:
                    named_cls[r] = _error_class(p.errno_values[p.errno[reported[r]]])
                    caused[r] = True
        # A region named by a message whose text quotes the error of the call that failed right
        # before it in its thread ("write stdout: Resource temporarily unavailable" after a
        # non-blocking write's EAGAIN): the program says that call is why, whatever the
        # allowlist or the timing errnos make of it, and whether or not the run's exit shows it
        # (a pipeline's stage exiting 1 under a shell that exits 0).
        for r in np.flatnonzero((named_cls == 0) & ~named_oc & (reported < 0)).tolist():
            reported[r] = _quoted_error(p, int(bs.orig[named[r]]), nb, noise)
            if reported[r] >= 0:
                named_cls[r] = _error_class(p.errno_values[p.errno[reported[r]]])
                caused[r] = True
        # A region named by an error-free event near the message (or exit) of a run exiting with
        # another status, right after a call without a path the thread gave up retrying (see
        # _pathless_retries_given_up): the message reports that call, a contention errno the
        # good runs met and got past (io_setup EAGAIN at the last depth an engine would halve to).
        if given_up.any():
            for r in np.flatnonzero((named_cls == 0) & ~named_oc & (reported < 0)).tolist():
                reported[r] = _given_up_cause(p, bs, int(named[r]), message_row, given_up, noise, k)
                if reported[r] >= 0:
                    named_cls[r] = _error_class(p.errno_values[p.errno[reported[r]]])
                    caused[r] = True
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
        # A process every good run has is missing: known events in another order in the thread
        # that would have started it are where the run went another way (make finding an
        # earlier run's output up to date and skipping the recipe), not timing.
        missing = _missing_roles(s_tkey, s_rolekey, matched_role, is_bad_stream, len(good_ids))
        parents = {rk.rsplit("/", 1)[0] for rk in missing if "/" in rk}
        reorder &= ~np.array([matched_role[int(j)] in parents for j in regions.sid], dtype=bool)
        state = (max_cls == 0) & recovered & has_novel
        if state.any():
            flips = _found_where_good_missed(p, bs, novel & ~explained, good_calls, good_ok_calls, n_errnos,
                                             good_outcomes)
            others = regions.max_over(novel & ~explained & ~flips)
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
            reorder |= (max_cls == 0) & recovered & has_novel & _extra_entries(p, bs, regions, novel & ~explained)
        # A region whose only new events are descriptors plumbed (a pipe made, dup2'd onto a
        # child's stdin before its exec, closed), re-joining good behaviour in a run exiting as
        # the good runs did: which descriptor a child got is timing (see _descriptor_plumbing).
        if same_exit:
            reorder |= (max_cls == 0) & recovered & has_novel & _descriptor_plumbing(p, bs, regions,
                                                                                      novel & ~explained)
            # ... or whose only new events reset a path's attributes right after the thread's
            # check of that path found them off: the check is the good runs' too, what it found
            # is timing (see _attributes_retouched).
            reorder |= (max_cls == 0) & recovered & has_novel & _attributes_retouched(p, bs, regions,
                                                                                       novel & ~explained)
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
                reorder |= _known_step_elsewhere((bs, gs), regions, max_cls, novel & ~explained, gh, role_hash, k,
                                                 (b_start, b_end), reach)
        # A call the diffed run's environment refused, whose role the thread gave to another
        # means before going on with the good runs' work, in a run exiting as they did: the same
        # work by another route (see _recovered_fallbacks), listed with the reorderings.
        if same_exit and (max_cls > 0).any():
            reorder |= _recovered_fallbacks(p, rows, bs, regions, named, b_cls, novel & ~explained, recovered, nb,
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
        order = np.lexsort((named_seq, -score))
        if (~reorder).any():
            first_unexplained = int(_seq_of(bs, regions.start[~reorder], seq_rows).min())
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
            proc = {"pid": ev["pid"], "tid": ev["tid"], "comm": ev["comm"], "role": s_role[sid]}
            path, npath, other = ev["path"], ev["npath"], ev["path2"]
            if other is not None and _blames_target(p, int(bs.orig[pos]), nb, ev["probe"], ev["errno"]):
                path, npath, other = other, _normalised(p, other), path
            # What the bad run printed from here on; after a content-free call (getpid...),
            # also the next event that says something.
            next_event = None
            if ev["errno"] is None and ev["path"] is None and ev["seq"] is not None and not ev.get("output"):
                for q in range(pos + 1, min(int(b_end[sid]), pos + 1 + 4 * k)):
                    cand = _event(rows, bs, q)
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
    count = int((~reorder).sum()) if len(regions) else 0

    # Roles every good trace has and the bad trace lacks.
    for rk in _missing_roles(s_tkey, s_rolekey, matched_role, is_bad_stream, len(good_ids)):
        count += 1
        if len(anomalies) < max_anomalies:
            anomalies.append(
                {
                    "rank": len(anomalies) + 1, "score": SEVERITY[0], "kind": "missing_process",
                    "probe": MISSING_PROBE, "errno": None, "path": None, "npath": None, "path2": None,
                    "then_wrote": None, "next_event": None,
                    "process": {"pid": None, "tid": None, "comm": rk.rsplit("/", 1)[-1].lstrip("~"), "role": rk},
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


def _match_by_exec_history(p: Prepared, s_rolekey: list[str], is_bad_stream: np.ndarray,
                           good_roles: set[str]) -> list[str]:
    """Role keys for the bad streams whose role no good run has, matched through the names
    their processes carried (`ncomm` at each call, in order): a process is named by its last
    exec'd name, so a launcher that stops before its final `exec job` (a check failing in
    `sh -c '... || exit 3; exec job'`) is `sh` where every good run's is `job`, and its
    children's keys differ by that parent too. A bad process maps to the good one under the
    same (mapped) parent whose names began with all of the bad one's (sh, unshare, sh, then
    job); its threads and children follow it. Other roles are left as they are."""
    starts = stream_starts(p)
    ends = np.r_[starts[1:], len(p)]
    comm = p.ncomm

    def names(i: int) -> tuple[int, ...]:
        c = np.asarray(comm[np.arange(starts[i], ends[i])])
        c = c[c >= 0]
        return tuple(c[np.r_[True, c[1:] != c[:-1]]].tolist()) if len(c) else ()

    good_procs: dict[str, list[tuple[int, ...]]] = {}
    for i in np.flatnonzero(~is_bad_stream).tolist():
        rk = s_rolekey[i]
        if "/~" not in rk:
            good_procs.setdefault(rk, []).append(names(i))
    mapping: dict[str, str] = {}
    bad = sorted(np.flatnonzero(is_bad_stream).tolist(), key=lambda i: s_rolekey[i].count("/"))
    for i in bad:
        rk = s_rolekey[i]
        if "/~" in rk or rk in mapping:
            continue
        parent, _, last = rk.rpartition("/")
        mparent = mapping.get(parent, parent)
        direct = f"{mparent}/{last}" if mparent else last
        if direct in good_roles:
            mapping[rk] = direct
            continue
        mine = names(i)
        for gk in sorted(good_procs):
            if gk.rpartition("/")[0] == mparent and mine and any(
                    len(g) > len(mine) and g[: len(mine)] == mine for g in good_procs[gk]):
                mapping[rk] = gk
                break
    out = list(s_rolekey)
    for i in np.flatnonzero(is_bad_stream).tolist():
        rk = s_rolekey[i]
        if rk in good_roles:
            continue
        proc, sep, thread = rk.partition("/~")
        key = mapping.get(proc, proc) + sep + thread
        if key in good_roles:
            out[i] = key
    return out


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


class _Teardowns:
    """Threads their run's teardown cut off: a signal (`SIGNAL_PROBES`) another process of
    the run sent successfully, at seq T, while the thread was still running -- it had begun
    before T and made calls after T, or, for a *checked* kill (right after the sender's
    wait4/waitid returned 0: its child was still running), its stream ends with no exit of
    its own (`OWN_END_PROBES`: killed where it stood). A multiprocessing pool terminating
    its workers, a start script's `kill $SRV_PID` ending a server whose daemon threads unwind
    in the middle of a request: where each thread stood when the signal came is timing.

    * A checked kill is itself timing (a good run's check found the child already gone and
      sent none): it is dropped from the streams (`checked`).
    * A good run's thread cut at T says nothing past T, like one the recording cut off: its
      stream gets no END token (`good_cut`, see _beyond_cut_off).
    * A bad thread cut at T by a checked kill, or by a signal the good runs also sent there
      (its window explained), has its error-free regions that reach past T dropped when
      every event of theirs before T is one the good runs have (`past_bad_cut`): its end, or
      how far it got, is the signal's timing. An error is never dropped, nor a thread that
      ended with no signal of its run after it (a crash).

    Signals are few: the work is per signal, over the streams' first and last rows."""

    def __init__(self, p: Prepared, outcomes: EventColumns, noise_codes: np.ndarray, nb: int):
        n = len(p)
        self.checked = np.zeros(0, dtype=np.int64)
        self.good_cut = np.zeros(0, dtype=bool)
        self.cut_by_exit = np.zeros(0, dtype=bool)  # per stream: its process's exit_group cut it
        self.any_bad = False
        sig = np.flatnonzero(code_in(p.probe, codes_where(p.probe_values, SIGNAL_PROBES), len(p.probe_values)))
        sig = sig[p.errno[sig] < 0]  # (one row-sized temporary: signals are few)
        starts = stream_starts(p)
        self.good_cut = np.zeros(len(starts), dtype=bool)
        self.cut_by_exit = np.zeros(len(starts), dtype=bool)
        s_tkey = np.asarray(p.tkey[starts]).astype(np.int64)
        self.bad_stream = s_tkey < 0
        # per stream: the first teardown that cut it (seq), for checked kills and for any signal
        inf = np.iinfo(np.int64).max
        self.cut_checked = np.full(len(starts), inf, dtype=np.int64)
        self.cut_any = np.full(len(starts), inf, dtype=np.int64)
        self.bad_signals: list[tuple[int, int]] = []  # (row, seq) of the bad run's unchecked signals
        self._spawned = (p, outcomes, starts)  # for _silent_children, worked out only when asked
        # a process's exit_group: the process's own end, cutting off its threads still running
        ends = np.flatnonzero(code_in(p.probe, codes_where(p.probe_values, ("exit_group",)), len(p.probe_values)))
        if not len(sig) and not len(ends):
            return  # (no teardown: a recording cut by -d or -p's detach, a trace another tool wrote)
        # the sender's call before each signal (noise passed over): a child check that said running
        prev = np.maximum(sig - 1, 0)
        moving = np.flatnonzero(code_in(p.probe[prev], noise_codes, len(p.probe_values)) & (prev > 0))
        for _ in range(CHECK_LOOKBACK):
            if not len(moving):
                break
            prev[moving] -= 1
            moving = moving[(prev[moving] > 0) & code_in(p.probe[prev[moving]], noise_codes, len(p.probe_values))]
        sig_stream = np.searchsorted(starts, sig, side="right") - 1
        check = (prev < sig) & (np.searchsorted(starts, prev, side="right") - 1 == sig_stream) & code_in(
            p.probe[prev], codes_where(p.probe_values, CHILD_CHECKS), len(p.probe_values))
        checked = np.zeros(len(sig), dtype=bool)
        if check.any():
            ret = numpy_of(pc.fill_null(outcomes.column("ret"), -1))[np.asarray(p.order)[prev[check]]]
            checked[np.flatnonzero(check)[ret == 0]] = True
        self.checked = sig[checked]
        last = np.r_[starts[1:], n] - 1
        s_pid = np.asarray(p.pid[starts]).astype(np.int64)
        first_seq, last_seq = np.asarray(p.seq[starts]), np.asarray(p.seq[last])
        silent = ~code_in(p.probe[last], codes_where(p.probe_values, OWN_END_PROBES), len(p.probe_values))
        sig_tkey = np.asarray(p.tkey[sig]).astype(np.int64)
        sig_pid = np.asarray(p.pid[sig]).astype(np.int64)
        sig_seq = np.asarray(p.seq[sig])
        for i in range(len(sig)):
            t = int(sig_seq[i])
            hit = (s_tkey == sig_tkey[i]) & (s_pid != sig_pid[i]) & (first_seq < t) & (
                (last_seq > t) | (silent & bool(checked[i])))
            self.cut_any[hit] = np.minimum(self.cut_any[hit], t)
            if checked[i]:
                self.cut_checked[hit] = np.minimum(self.cut_checked[hit], t)
            elif sig[i] < nb:
                self.bad_signals.append((int(sig[i]), t))
        self._cut_at_exit(p, ends, starts, (s_tkey, s_pid, first_seq), silent)
        self.good_cut = ~self.bad_stream & (self.cut_any < inf)
        self.any_bad = bool((self.bad_stream & (self.cut_any < inf)).any())

    def _cut_at_exit(self, p: Prepared, ends: np.ndarray, starts: np.ndarray, streams: tuple,
                     silent: np.ndarray) -> None:
        """Threads their process's exit cut off: another thread of the process called
        exit_group at seq T after the thread began, and the thread's stream ends with no exit
        of its own (killed where it stood: Python's interpreter exit with a daemon thread
        still tidying up, a C program returning from main while a worker flushes). Where such
        a thread stood at T is timing, like a checked kill's: cut in `cut_checked`."""
        if not len(ends):
            return
        s_tkey, s_pid, first_seq = streams
        # per process (trace, pid): the seq and stream of its first exit_group
        e_stream = np.searchsorted(starts, ends, side="right") - 1
        e_key = s_tkey[e_stream] * np.int64(1 << 32) + s_pid[e_stream]
        e_seq = np.asarray(p.seq[ends]).astype(np.int64)
        order = np.lexsort((e_seq, e_key))
        e_key, e_seq, e_stream = e_key[order], e_seq[order], e_stream[order]
        head = np.r_[True, e_key[1:] != e_key[:-1]]
        e_key, e_seq, e_stream = e_key[head], e_seq[head], e_stream[head]
        key = s_tkey * np.int64(1 << 32) + s_pid
        at = np.minimum(np.searchsorted(e_key, key), len(e_key) - 1)
        hit = (e_key[at] == key) & (e_stream[at] != np.arange(len(key))) & (first_seq < e_seq[at]) & silent
        t = np.where(hit, e_seq[at], np.iinfo(np.int64).max)
        np.minimum(self.cut_any, t, out=self.cut_any)
        np.minimum(self.cut_checked, t, out=self.cut_checked)
        self.cut_by_exit = hit

    def good_cut_points(self, gs: align.Streams, g_start: np.ndarray, g_end: np.ndarray, seq_rows: np.ndarray,
                        matched_role: list[str]) -> dict[str, np.ndarray]:
        """Per role: where each cut good thread stood when the teardown came -- the token of its
        last call before it (one token: loop compression folds a pair differently in a run
        that went on). What it did after (a daemon thread unwinding, loading libgcc_s) is the
        teardown's doing."""
        out: dict[str, list[int]] = {}
        for j in np.flatnonzero(self.good_cut & (g_end > g_start)).tolist():
            lo, hi = int(g_start[j]), int(g_end[j])
            orig = gs.orig[lo:hi]
            seqs = np.where(orig >= 0, seq_rows[np.maximum(orig, 0)], np.iinfo(np.int64).max)
            before = np.flatnonzero(seqs < self.cut_any[j])
            if len(before):
                out.setdefault(matched_role[j], []).append(int(gs.tok[lo + int(before[-1])]))
        return {role: np.array(keys, dtype=gs.tok.dtype) for role, keys in out.items()}

    def past_bad_cut(self, regions: align.Regions, bs: align.Streams, explained: np.ndarray, novel: np.ndarray,
                     b_cls: np.ndarray, seq_rows: np.ndarray, cleanups: np.ndarray) -> align.Regions:
        """`regions` without the error-free ones of bad threads cut by a teardown that reach past
        it and have, before it, only events the good runs have (see the class). A descriptor
        given back EBADF past the teardown (`cleanups`, see _unwind_cleanups) counts as no error
        there: the signal's unwinding tidying up a request its handler had already closed."""
        cut = self.cut_checked.copy()
        # an unchecked signal counts when the good runs sent it at that point too
        for row, t in self.bad_signals:
            at = np.flatnonzero(bs.orig == row)
            if len(at) and explained[at[0]]:
                hit = self.bad_stream & (self.cut_any == t)
                cut[hit] = np.minimum(cut[hit], t)
        inf = np.iinfo(np.int64).max
        keep = np.ones(len(regions), dtype=bool)
        for r in np.flatnonzero(cut[regions.sid] < inf).tolist():
            lo, hi = int(regions.start[r]), int(regions.end[r]) + 1
            orig = bs.orig[lo:hi]
            after = (orig < 0) | (seq_rows[np.maximum(orig, 0)] > cut[int(regions.sid[r])])
            if ((b_cls[lo:hi] > 0) & ~(cleanups[lo:hi] & after)).any():
                continue
            # past the teardown, and nothing new before it
            keep[r] = not (after.any() and not (novel[lo:hi] & ~explained[lo:hi] & ~after).any())
        if keep.all():
            return regions
        return align.Regions(regions.start[keep], regions.end[keep], regions.sid[keep])


    def _stood(self, gs: align.Streams, g_bounds: tuple, matched_role: list[str],
               seq_rows: np.ndarray) -> dict[str, list[int | None] | None]:
        """Per role: the token each cut good thread of it last made before its cut (None: cut
        before its first call), or None when some good thread of the role was not cut."""
        g_start, g_end = g_bounds
        stood: dict[str, list[int | None] | None] = {}
        for j in np.flatnonzero(~self.bad_stream).tolist():
            role = matched_role[j]
            if not self.good_cut[j]:
                stood[role] = None
                continue
            if role in stood and stood[role] is None:
                continue
            lo, hi = int(g_start[j]), int(g_end[j])
            orig = gs.orig[lo:hi]
            seqs = np.where(orig >= 0, seq_rows[np.maximum(orig, 0)], np.iinfo(np.int64).max)
            before = np.flatnonzero(seqs < self.cut_any[j])
            stood.setdefault(role, []).append(int(gs.tok[lo + int(before[-1])]) if len(before) else None)  # type: ignore[union-attr]
        # A thread role no good run has a stream of, where every good run's process of it made a
        # thread that never made a call: cut before its first one (a worker pool started as main
        # exited, whose threads the scheduler ran in some good runs and in none in others).
        absent = {matched_role[j] for j in np.flatnonzero(self.bad_stream).tolist()} - set(stood)
        absent = {role for role in absent if "/~" in role}
        if absent:
            silent = self._silent_children(matched_role)
            goods = int(np.count_nonzero(unique_ints(np.asarray(self._spawned[0].tkey[self._spawned[2]])) >= 0))
            for role in absent:
                parent = role.rsplit("/~", 1)[0]
                if goods and all(parent in roles for roles in silent.values()) and len(silent) == goods:
                    stood[role] = [None]
        return stood

    def _silent_children(self, matched_role: list[str]) -> dict[int, set[str]]:
        """Per good trace (tkey): the roles of the streams that made a thread or process
        (`SPAWN_PROBES`, its id returned) which made no call in that trace -- cut off by an exit
        before its first one."""
        p, outcomes, starts = self._spawned
        rows = np.flatnonzero(code_in(p.probe, codes_where(p.probe_values, SPAWN_PROBES), len(p.probe_values))
                              & (np.asarray(p.tkey) >= 0))
        if not len(rows):
            return {}
        ret = numpy_of(pc.fill_null(outcomes.column("ret"), -1))[np.asarray(p.order)[rows]]
        s_tkey = np.asarray(p.tkey[starts]).astype(np.int64)
        s_tid = np.asarray(p.tid[starts]).astype(np.int64)
        seen = set(zip(s_tkey.tolist(), s_tid.tolist(), strict=True))
        row_sid = np.searchsorted(starts, rows, side="right") - 1
        out: dict[int, set[str]] = {}
        for r, child, sid in zip(rows.tolist(), ret.tolist(), row_sid.tolist(), strict=True):
            tkey = int(p.tkey[r])
            if child > 0 and (tkey, int(child)) not in seen:
                out.setdefault(tkey, set()).add(matched_role[sid])
        return out

    def good_reach(self, bs: align.Streams, gs: align.Streams, b_bounds: tuple, g_bounds: tuple,
                   matched_role: list[str], seq_rows: np.ndarray) -> np.ndarray:
        """Per stream: for a bad thread every good thread of whose role a teardown or its
        process's exit cut off, the position just past the bad thread's last event of a token
        one of them was cut at -- how far the good runs saw that role go; what the bad thread
        did after (its own exit: rt_sigprocmask, madvise, exit, which the good runs' threads
        never reached) is no evidence either way. Else the stream's end."""
        b_start, b_end = b_bounds
        reach = np.asarray(b_end).copy()
        if not (self.good_cut & ~self.bad_stream).any():
            return reach
        stood = self._stood(gs, g_bounds, matched_role, seq_rows)
        for sid in np.flatnonzero(self.bad_stream[: len(reach)]).tolist():
            points = stood.get(matched_role[sid])
            if not points or None in points:
                continue
            lo, hi = int(b_start[sid]), int(b_end[sid])
            at = [np.flatnonzero(bs.tok[lo:hi] == t) for t in points]
            if all(len(a) for a in at):
                reach[sid] = lo + 1 + max(int(a[-1]) for a in at)
        return reach

    def past_every_good_cut(self, regions: align.Regions, bs: align.Streams, gs: align.Streams, b_start: np.ndarray,
                            g_bounds: tuple, b_cls: np.ndarray, matched_role: list[str],
                            seq_rows: np.ndarray) -> align.Regions:
        """`regions` without those of a bad thread its process's exit cut off that begin past
        the point where every good run's thread of its role was cut off too (by a teardown or
        its own process's exit) and hold soft errors at most: no good run saw that role go
        that far, so a routine miss there (a background poller's probe of an optional file,
        reached in this run only because main exited later) is no evidence either way. A hard
        error there, and any error before the good runs' farthest cut, is still reported."""
        if not len(regions) or not (self.cut_by_exit & self.bad_stream).any():
            return regions
        stood = self._stood(gs, g_bounds, matched_role, seq_rows)
        keep = np.ones(len(regions), dtype=bool)
        for r in np.flatnonzero(self.cut_by_exit[regions.sid]).tolist():
            start, end, sid = int(regions.start[r]), int(regions.end[r]), int(regions.sid[r])
            points = stood.get(matched_role[sid])
            if not points or (b_cls[start : end + 1] > 1).any():
                continue
            passed = bs.tok[int(b_start[sid]) : start]
            keep[r] = not all(t is None or bool((passed == t).any()) for t in points)
        if keep.all():
            return regions
        return align.Regions(regions.start[keep], regions.end[keep], regions.sid[keep])


def _unwind_cleanups(p: Prepared, bs: align.Streams) -> np.ndarray:
    """Bad positions that give a descriptor back failing EBADF (`DESCRIPTOR_RELEASES` and shutdown):
    past a teardown signal in the thread it interrupted, the unwinding's clean-up of a descriptor
    already gone -- SIGTERM landing in socketserver's process_request after the handler closed
    the request, whose `except: shutdown_request(request)` then shuts the closed socket down."""
    calls = codes_where(p.probe_values, DESCRIPTOR_RELEASES | {"shutdown"})
    ebadf = codes_where(p.errno_values, ("EBADF",))
    rows = np.maximum(bs.orig, 0)
    return (bs.orig >= 0) & code_in(p.probe[rows], calls, len(p.probe_values)) & code_in(
        p.errno[rows], ebadf, len(p.errno_values))


def _reordered_at_end(p: Prepared, sids: np.ndarray, bs: align.Streams, gs: align.Streams, b_bounds: tuple,
                      g_bounds: tuple, matched_role: list[str], s_tkey: np.ndarray,
                      same_exit: bool = False) -> np.ndarray:
    """For bad streams `sids` whose last region has no error and only events the good runs
    have: whether the thread did every kind of event a good thread of its role did -- or all
    the bad run's threads of its role together did what a good run's did (a thread pool shares
    its work differently each run). Then the region is the same work in another order (a set
    iterated under a per-run hash seed), not a thread stopping early. In a run exiting as the
    good runs did, so is a thread whose kinds missing from a good one's were all done by other
    threads of its process: work the program hands to a thread of its own in some runs (zstd
    -T0 reads a large enough input on its I/O thread, a smaller one on its main thread)."""
    streams_of: dict[tuple[str, int], list[int]] = {}
    for j in range(len(s_tkey)):
        streams_of.setdefault((matched_role[j], int(s_tkey[j])), []).append(j)
    sleeps = codes_where(p.probe_values, TIMING_PROBES)

    def tokens(side: align.Streams, bounds: tuple, js: list[int]) -> np.ndarray:
        lo, hi = bounds
        at = np.concatenate([np.arange(lo[j], hi[j]) for j in js]) if js else np.zeros(0, dtype=np.int64)
        # (a sleep is no kind of work: whether a thread slept in its exit handshake is timing)
        orig = side.orig[at]
        slept = (orig >= 0) & code_in(p.probe[np.maximum(orig, 0)], sleeps, len(p.probe_values))
        return unique_ints(side.tok[at[~slept]])

    out = np.zeros(len(sids), dtype=bool)
    threads_of: dict[int, list[int]] | None = None  # pid -> the bad run's streams of it (made when asked)
    for i, sid in enumerate(sids.tolist()):
        role = matched_role[sid]
        goods = [key for key in streams_of if key[0] == role and key[1] >= 0][:MAX_SAME_ROLE]
        mine = tokens(bs, b_bounds, [sid])
        singles = [j for key in goods for j in streams_of[key]][:MAX_SAME_ROLE]
        out[i] = any(isin(tokens(gs, g_bounds, [j]), mine).all() for j in singles)
        if not out[i] and goods:
            ours = tokens(bs, b_bounds, streams_of[(role, -1)])
            out[i] = any(isin(tokens(gs, g_bounds, streams_of[key]), ours).all() for key in goods)
        if not out[i] and same_exit and singles:
            if threads_of is None:
                threads_of = {}
                for j in np.flatnonzero(s_tkey == -1).tolist():
                    threads_of.setdefault(_stream_pid(p, bs, b_bounds, j), []).append(j)
            siblings = [j for j in threads_of.get(_stream_pid(p, bs, b_bounds, sid), []) if j != sid]
            theirs = tokens(bs, b_bounds, siblings)
            out[i] = any(isin(kinds[~isin(kinds, mine)], theirs).all()
                         for kinds in (tokens(gs, g_bounds, [j]) for j in singles))
    return out


def _stream_pid(p: Prepared, side: align.Streams, bounds: tuple, j: int) -> int:
    """The process of stream `j` (-1: no call of it in `side`)."""
    lo, hi = int(bounds[0][j]), int(bounds[1][j])
    rows = side.orig[lo:hi]
    rows = rows[rows >= 0]
    return int(p.pid[rows[0]]) if len(rows) else -1


def _seen_events(bad: align.Streams, good: align.Streams, role_hash: np.ndarray) -> np.ndarray:
    """Which `bad` positions' events (token under the stream's role) some good position has:
    `align.seen_in` of the length-1 window hashes, computed for the good positions whose
    role-mixed token is one of the bad ones (a binary search into the few bad values) instead
    of hashing and sorting every good position. The hash is a bijection of that value, so
    the result is the same."""
    if len(bad) == 0 or len(good) == 0:
        return np.zeros(len(bad), dtype=bool)
    wanted = unique_ints(role_hash[bad.sid] ^ bad.tok)
    hit = np.zeros(len(good), dtype=bool)
    for a in range(0, len(good), align._BLOCK):
        b = min(len(good), a + align._BLOCK)
        mixed = take(role_hash, good.sid[a:b])
        mixed ^= good.tok[a:b]
        # a hash set of the few wanted values (compiled): a binary search per position into
        # them took ~2 % of a 2 x 1M diff's main thread
        found = native.seen_in(mixed, wanted)
        hit[a:b] = in_sorted(mixed, wanted) if found is None else found
    return align.seen_in(align.window_hashes(bad, role_hash, 1), align.window_hashes(good.take(hit), role_hash, 1))


def _raw_outcome_changes(p: Prepared, nb: int, cand: np.ndarray, good_ok_calls: np.ndarray) -> np.ndarray:
    """Rows of `cand` (bad errors) whose call -- probe and path as recorded -- the good runs
    completed successfully and never failed with that errno. Only the call sites the good
    runs completed are looked at; raw paths are fetched for those rows only and compared in
    Arrow (call key, raw path, errno joined into one string)."""
    out = np.zeros(len(p), dtype=bool)
    cand = cand[isin(_call_keys(p, cand), good_ok_calls)]
    if not len(cand):
        return out
    good = _good_rows_where(code_in(p.probe[nb:], p.probe[cand], len(p.probe_values)), nb)
    good = good[in_sorted(_call_keys(p, good), unique_ints(_call_keys(p, cand)))]
    def keys(rows: np.ndarray, errno: np.ndarray | None) -> pa.Array:
        raw = p.raw_paths(rows)
        parts = [pc.cast(pa.array(_call_keys(p, rows)), pa.string()), pc.fill_null(raw, "")]
        if errno is not None:
            parts.append(pc.cast(pa.array(errno.astype(np.int64)), pa.string()))
        return pc.binary_join_element_wise(*parts, "\x00")

    ok = good[p.errno[good] < 0]
    failed = good[p.errno[good] >= 0]
    done = pc.is_in(keys(cand, None), value_set=keys(ok, None)).to_numpy(zero_copy_only=False)
    same_fail = pc.is_in(keys(cand, p.errno[cand]), value_set=keys(failed, p.errno[failed])).to_numpy(
        zero_copy_only=False)
    out[cand] = done & ~same_fail
    return out


def _probe_misses(p: Prepared, err_rows: np.ndarray) -> np.ndarray:
    """The misses of *probe loops*: a thread trying the members of a numbered family -- one
    call site (probe and plain normalised path: uverbs0..3 mask alike) at raw paths of its
    own -- until one answers. Per (thread, call site) the calls there are misses
    (`PROBE_MISS_ERRNOS`), each within `RETRY_GAP` rows of the last, ending in one success
    at a raw path none of them had; the misses are marked. Only at call sites where no thread
    of any run, good or bad, succeeded more than once or went on calling there after its
    success: a loop that stops at the first answer. A scan that opens every member (shards
    00000..00004, each worker's parts) succeeds many times per thread, so a member missing
    there stays an outcome change; a probe that finds no member (every candidate missing)
    keeps its misses, and a hard error (EACCES at a member) is never a miss."""
    out = np.zeros(len(p), dtype=bool)
    if p.raw_path is None or not len(err_rows):
        return out
    miss_codes = codes_where(p.errno_values, PROBE_MISS_ERRNOS)
    cand = err_rows[code_in(p.errno[err_rows], miss_codes, len(p.errno_values))]
    if not len(cand):
        return out
    # every row at those call sites (any outcome), grouped by (thread, call site) in time order:
    # the rows whose probe and plain path are both among the candidates' (two lookup tables,
    # one pass over the codes each), then their keys -- a few hundred rows, where the keys of
    # every row of the candidates' probes (~300,000 at a million openat calls) were made
    rows = np.flatnonzero(code_in(p.probe, p.probe[cand], len(p.probe_values))
                          & view_in(p.plainpath, p.plainpath[cand], len(p.npath_values)))
    calls = _call_keys(p, rows)
    keep = in_sorted(calls, unique_ints(_call_keys(p, cand)))
    rows, calls = rows[keep], calls[keep]
    order = np.lexsort((rows, calls, p.sid[rows]))
    rows, calls = rows[order], calls[order]
    sid = p.sid[rows].astype(np.int64)
    first = np.flatnonzero(np.r_[True, (sid[1:] != sid[:-1]) | (calls[1:] != calls[:-1])])
    last = np.r_[first[1:], len(rows)] - 1
    ok = p.errno[rows] < 0
    n_ok = np.add.reduceat(ok.astype(np.int64), first)
    # a call site where some thread succeeded twice, or called again after its success, is
    # no first-answer probe: none of its groups counts
    not_probe = (n_ok > 1) | ((n_ok == 1) & ~ok[last])
    bad_sites = unique_ints(calls[first[not_probe]])
    group = np.repeat(np.arange(len(first)), last - first + 1)
    # per group, before its answer: calls that are no miss, gaps too long for a
    # loop, and the raw path of the group's answer met before it (the same path failing then
    # answering is a wait, see _retried, not a probe)
    raw = p.raw_path[rows]
    odd = ~code_in(p.errno[rows], miss_codes, len(p.errno_values))
    odd[1:] |= (_gaps_past_misses(p, rows, miss_codes) > RETRY_GAP) & (group[1:] == group[:-1])
    odd |= raw == raw[last][group]
    odd[last] = False
    odd_before = np.add.reduceat(odd.astype(np.int64), first)
    probe = ~not_probe & (n_ok == 1) & (last > first) & (odd_before == 0) & (raw[last] >= 0)
    probe &= ~in_sorted(calls[first], bad_sites)
    hit = probe[group]
    hit[last] = False  # the answer itself stays
    out[rows[hit]] = True
    return out


def _gaps_past_misses(p: Prepared, rows: np.ndarray, miss_codes: np.ndarray) -> np.ndarray:
    """Per pair of consecutive `rows` (sorted within each group): the rows between them, not
    counting misses (calls failing with `miss_codes`, ENOENT/ENOTDIR). A loader trying a
    library in each directory of its path first tries every hwcaps subdirectory of that
    directory (glibc-hwcaps/x86-64-v4 ... tls/haswell/x86_64: some thirty misses, each with a
    stat of the subdirectory) -- those misses are the same walk, not a pause between its steps;
    what else happened in between is what tells two loops apart (RETRY_GAP). Only gaps up to
    WALK_GAP rows are looked into (a directory's subdirectories are fewer): the work is bounded
    by their number, never the table's size."""
    gaps = np.diff(rows)
    long = np.flatnonzero((gaps > RETRY_GAP) & (gaps <= WALK_GAP))
    if not len(long):
        return gaps
    gaps = gaps.copy()
    inner = gaps[long] - 1  # rows strictly between each pair
    # every row strictly between, pair by pair (each run of `inner` rows after the pair's first)
    pair = np.repeat(np.arange(len(long)), inner)
    offset = np.arange(int(inner.sum())) - np.repeat(np.cumsum(inner) - inner, inner)
    between = rows[long][pair] + 1 + offset
    errno = np.asarray(p.errno[between])
    missing = (errno >= 0) & code_in(np.maximum(errno, 0), miss_codes, len(p.errno_values))
    gaps[long] = np.bincount(pair, weights=~missing, minlength=len(long)).astype(gaps.dtype) + 1
    return gaps


def _retried(p: Prepared, cand: np.ndarray, hard_codes: np.ndarray) -> np.ndarray:
    """The attempts of retry loops: a run of errors of `cand` at one call site (probe and
    plain normalised path) of a thread, each attempt at most `RETRY_GAP` rows after the last,
    ending in a success there, with a wait in between (`WAIT_PROBES`: a loop, not a second
    attempt with other flags such as sqlite's read-write then read-only open, nor a program
    creating what it did not find). Marks
    the rows from the first failed attempt up to the success, except hard errors
    (`hard_codes`: errors a retry loop does not wait out)."""
    n = len(p)
    out = np.zeros(n, dtype=bool)
    if not len(cand):
        return out
    # the rows at those call sites, keyed by (stream, call site)
    rows = np.flatnonzero(code_in(p.probe, p.probe[cand], len(p.probe_values)))
    calls = _call_keys(p, rows)
    keep = in_sorted(calls, unique_ints(_call_keys(p, cand)))
    rows, calls = rows[keep], calls[keep]
    radix = np.int64(calls.max()) + 1
    if radix * (np.int64(p.sid.max()) + 1) >= 2**62:
        return out
    key = p.sid[rows].astype(np.int64) * radix + calls
    is_cand = in_sorted(rows, cand)  # both sorted row numbers
    # an attempt right after another at the same call (no call in between) is no loop
    is_cand &= ~np.r_[(rows[1:] == rows[:-1] + 1) & (key[1:] == key[:-1]), False]
    ok = p.errno[rows] < 0
    # by site then time (rows are in stream order), cut into chains: a new chain at another
    # site, after a gap, after a success or another error
    order = np.lexsort((rows, key))
    rows, key, is_cand, ok = rows[order], key[order], is_cand[order], ok[order]
    cut = np.ones(len(rows), dtype=bool)
    cut[1:] = (key[1:] != key[:-1]) | (rows[1:] - rows[:-1] > RETRY_GAP) | ~is_cand[:-1]
    first = np.flatnonzero(cut)
    last = np.r_[first[1:], len(rows)] - 1
    chains = is_cand[first] & ok[last] & (last > first)
    lo, hi = rows[first[chains]], rows[last[chains]]
    if len(lo):
        keep = _same_peer(p, lo, hi)
        lo, hi = lo[keep], hi[keep]
    if not len(lo):
        return out
    # a loop waits between attempts (a sleep, a poll, a child's exit): a wait row in
    # [lo, hi); a program creating what it did not find (mkdir, then the create) does not.
    # A create that found its target already there, removed it and created it again (gzip
    # -f over the last run's output) is no loop either, but is the same outcome as the good
    # runs' create: transparent too.
    waits = np.flatnonzero(code_in(p.probe, codes_where(p.probe_values, WAIT_PROBES),
                                   len(p.probe_values)))
    keep = (np.searchsorted(waits, hi) > np.searchsorted(waits, lo)) | _cleared_in_between(p, lo, hi)
    lo, hi = lo[keep], hi[keep]
    if len(lo):
        edges = np.zeros(n + 1, dtype=np.int32)
        np.add.at(edges, lo, 1)
        np.add.at(edges, hi, -1)
        out = np.cumsum(edges[:-1]) > 0
        out &= ~code_in(p.errno, hard_codes, len(p.errno_values))
        out[_work_on_files(p, np.flatnonzero(out), p.plainpath[lo])] = False
    return out


def _work_on_files(p: Prepared, body: np.ndarray, loop_paths: np.ndarray) -> np.ndarray:
    """The rows of a retry loop's `body` that work on a file (a path, not a socket, a pipe or
    /dev, /proc, /sys, which a wait loop polls) other than the loop's own (`loop_paths`: gzip
    -f's removal of the output its create found there is the loop's): work the thread does
    while it waits, which the good runs do wherever they do it -- curl loads its CA file
    between its ClientHello and the server's answer, inside the wait where the answer was late
    (recvfrom EAGAIN, poll) and after it where it was there."""
    body = body[p.plainpath[body] >= 0]
    if not len(body):
        return body
    values = p.npath_values.arrow
    files = numpy_of(pc.fill_null(pc.match_substring_regex(values, "^/"), False)) & ~numpy_of(
        pc.fill_null(pc.match_substring_regex(values, "^/(dev|proc|sys)/"), False))
    body = body[files[p.plainpath[body]]]
    return body[~isin(p.plainpath[body], unique_ints(loop_paths))]


def _known_errors_gone_on(bs: align.Streams, known_rows: np.ndarray, explained: np.ndarray, k: int,
                          n_rows: int) -> np.ndarray:
    """Bad positions of an error the good runs had at the same call with the same errno
    (`known_rows`), after which the thread went on as they did -- the window the error opens
    is one of theirs: a known event, so a region it sits in is judged as one of known events
    (in another order: timing). rsync's sender probes each file with an O_DIRECTORY open
    (ENOTDIR, in every run) amid socket writes that interleave with its reads as the buffers
    fill. An error after which the thread goes another way than the good runs (no mkdir after
    the ENOENT they made the directory after: the program gave up) keeps its class."""
    if not len(known_rows):
        return np.zeros(0, dtype=np.int64)
    known = np.zeros(n_rows, dtype=bool)
    known[known_rows] = True
    pos = np.flatnonzero((bs.orig >= 0) & known[np.maximum(bs.orig, 0)])
    after = pos + (k - 1)
    ok = after < len(bs)
    ok[ok] = (bs.sid[after[ok]] == bs.sid[pos[ok]]) & explained[after[ok]]
    return pos[ok]


def _same_peer(p: Prepared, first: np.ndarray, success: np.ndarray) -> np.ndarray:
    """Per retry chain (its first failed attempt, its success): whether the success reached the
    address the attempt was refused at, when that is a socket address. Ports are masked in the
    call site (the kernel assigns them anew each run), but within a run a retry goes to the
    same peer: a pool worker refused by one backend (ECONNREFUSED) that then takes the next
    task, another backend's, and connects is no retry of the refused connect -- that backend is
    down (a thread pool reusing the worker that failed fast, where it usually starts a fifth)."""
    keep = np.ones(len(first), dtype=bool)
    if p.raw_path is None:
        return keep
    raw_a, raw_b = p.raw_path[first], p.raw_path[success]
    for i in np.flatnonzero(raw_a != raw_b).tolist():
        if int(raw_a[i]) >= 0 and p.raw_path_values[int(raw_a[i])].startswith(SOCKET_ADDRESS_PREFIXES):
            keep[i] = False
    return keep


def _descriptor_room_made(p: Prepared, err_any: np.ndarray) -> np.ndarray:
    """Rows of a full descriptor table the thread made room in: a call failing EMFILE/ENFILE
    (`TABLE_FULL_ERRNOS`) followed, within `RETRY_GAP` rows of its thread, by a descriptor given
    back (`DESCRIPTOR_RELEASES`) and then the same call -- probe, and path as recorded --
    succeeding, or failing so again where that attempt made room in its turn (one eviction
    after another). An fd cache evicting its oldest entry does this: which of its opens meets
    the limit (a file, a pipe, an eventfd) and how often is how its entries came and went, not a
    failure. A call failing with nothing given back before its next attempt, or never getting
    past, stays an error. Vectorised over a window of `RETRY_GAP` rows per failure (in blocks:
    an accept loop's EMFILE storm has a hundred thousand)."""
    out = np.zeros(len(p), dtype=bool)
    codes = codes_where(p.errno_values, TABLE_FULL_ERRNOS)
    cand = err_any[code_in(p.errno[err_any], codes, len(p.errno_values))] if len(codes) else err_any[:0]
    if not len(cand):
        return out
    releases = codes_where(p.probe_values, DESCRIPTOR_RELEASES)
    n, step = len(p), np.arange(1, RETRY_GAP + 1)
    # only failures with a release within the window can have made room (a storm of EMFILE
    # with no close in between -- an accept loop spinning -- drops out here, cheaply)
    given_back = np.flatnonzero(code_in(p.probe, releases, len(p.probe_values)) & (p.errno < 0))
    at_next = np.searchsorted(given_back, cand, side="right")
    cand = cand[(at_next < len(given_back))
                & (given_back[np.minimum(at_next, max(len(given_back) - 1, 0))] - cand <= RETRY_GAP)]
    if not len(cand):
        return out

    def at(column: Any, rows: np.ndarray) -> np.ndarray:  # a column at a 2-D block of rows
        return np.asarray(column[rows.ravel()]).reshape(rows.shape)

    blocks = []
    for lo in range(0, len(cand), 1 << 16):
        r = cand[lo : lo + (1 << 16)]
        idx = np.minimum(r[:, None] + step, n - 1)
        mine = at(p.sid, r[:, None])
        # a thread's rows are contiguous: past its last row the window holds no more of it
        valid = np.logical_and.accumulate((r[:, None] + step < n) & (at(p.sid, idx) == mine), axis=1)
        same = valid & (at(p.probe, idx) == at(p.probe, r[:, None])) & (
            at(p.plainpath, idx) == at(p.plainpath, r[:, None]))
        if p.raw_path is not None:
            same &= at(p.raw_path, idx) == at(p.raw_path, r[:, None])
        errno = at(p.errno, idx)
        released = valid & code_in(at(p.probe, idx), releases, len(p.probe_values)) & (errno < 0)
        # a release before each position of the window
        released_before = np.logical_or.accumulate(np.c_[np.zeros(len(r), dtype=bool), released[:, :-1]], axis=1)
        blocks.append((r, idx, same & released_before, errno, at(p.errno, r[:, None])))
    for r, _, made_room, errno, _own in blocks:
        out[r] = (made_room & (errno < 0)).any(axis=1)
    # one eviction after another: an attempt that made room for the next failing one
    for _ in range(RETRY_GAP * 4):
        changed = False
        for r, idx, made_room, errno, own in blocks:
            more = ~out[r] & (made_room & (errno == own) & out[idx]).any(axis=1)
            if more.any():
                out[r[more]] = changed = True
        if not changed:
            break
    return out


def _idem_mkdir_causes(bs: align.Streams, regions: align.Regions, rows: np.ndarray, b_cls: np.ndarray,
                       b_oc: np.ndarray, k: int) -> None:
    """Bad idempotent mkdirs (`rows`, taken for successes in the tokens) within `k` positions
    before a divergence region of their thread, or inside one: the region starts there, and
    the mkdir is a soft error -- an outcome change where the good runs created the directory."""
    if not len(rows):
        return
    pos = np.flatnonzero(isin(bs.orig, rows))
    for q in pos.tolist():
        r = np.flatnonzero((regions.sid == bs.sid[q]) & (regions.start - k <= q) & (regions.end >= q))
        if not len(r):
            continue
        r = int(r[0])
        regions.start[r] = min(int(regions.start[r]), q)
        b_cls[q] = 1
        b_oc[q] = True


def _missing_roles(s_tkey: np.ndarray, s_rolekey: list[str], matched_role: list[str], is_bad_stream: np.ndarray,
                   n_good: int) -> list[str]:
    """Process roles every good trace has and the bad trace lacks (threads aside: their
    process's clone calls already diverge), sorted."""
    per_trace_roles: dict[int, set[str]] = {}
    for tk, rk in zip(s_tkey, s_rolekey, strict=True):
        per_trace_roles.setdefault(int(tk), set()).add(rk)
    common = set.intersection(*(per_trace_roles.get(t, set()) for t in range(n_good))) if n_good else set()
    bad_roles = {matched_role[i] for i in np.flatnonzero(is_bad_stream)} | per_trace_roles.get(-1, set())
    return [rk for rk in sorted(common - bad_roles) if not rk.rsplit("/", 1)[-1].startswith("~")]


def _explained_without(bs: align.Streams, gh: np.ndarray, role_hash: np.ndarray, k: int, start: int, end: int,
                       drop: np.ndarray, bounds: tuple, sid: int) -> bool:
    """Whether the bad stream `sid` around the region [start, end] -- from k-1 positions before
    it to k-1 after -- has only windows some good stream has once positions `drop` are left out."""
    lo = max(int(bounds[0][sid]), start - (k - 1))
    hi = min(int(bounds[1][sid]), end + k)
    idx = np.arange(lo, hi)
    idx = idx[~isin(idx, drop)]
    if not len(idx):
        return True
    h = align.window_hashes(bs.take(idx), role_hash, k)
    if lo != int(bounds[0][sid]):
        h = h[k - 1 :]  # the first k-1 windows would be padded as if the stream began there
    return bool(align.seen_in(h, gh).all())


def _found_where_good_missed(p: Prepared, bs: align.Streams, cand: np.ndarray, good_calls: np.ndarray,
                             good_ok_calls: np.ndarray, n_errnos: np.int64, good_outcomes: np.ndarray) -> np.ndarray:
    """Bad positions of `cand` that succeed at a call site (probe, plain normalised path)
    where the good runs only ever failed, with soft errors (`SOFT_ERRNOS`: rm -f's ENOENT)."""
    out = np.zeros(len(bs), dtype=bool)
    pos = np.flatnonzero(cand & (bs.orig >= 0))
    rows = bs.orig[pos]
    ok = (p.errno[rows] < 0) & (p.plainpath[rows] >= 0)
    pos, rows = pos[ok], rows[ok]
    if not len(pos):
        return out
    calls = _call_keys(p, rows)
    hit = isin(calls, good_calls) & ~isin(calls, good_ok_calls)
    hard = codes_where(p.errno_values, lambda v: v not in SOFT_ERRNOS).astype(np.int64) + 1
    for i in np.flatnonzero(hit).tolist():  # few: the good runs' outcomes there are soft errors only
        hit[i] = not isin(calls[i] * n_errnos + hard, good_outcomes).any()
    out[pos[hit]] = True
    return out


def _leftover_then_message(p: Prepared, bs: align.Streams, gh: np.ndarray, role_hash: np.ndarray, k: int,
                           region: tuple[int, int, int], message_row: int, bounds: tuple, sid: int,
                           good: tuple) -> bool:
    """An error-free region (start, end, named position) of a run that exits with another
    status, named by a success where the good runs only failed softly (a cache or state file
    an earlier run left), which goes on to write the run's last message (`message_row`): the
    leftover is not why when, its path's events left out, every position up to the message
    is one the good runs have -- the run did their work, then failed on something else."""
    start, end, pos = region
    at = np.flatnonzero(bs.orig[start : end + 1] == message_row)
    if not len(at) or bs.orig[pos] < 0:
        return False
    q = start + int(at[0])
    one = np.zeros(len(bs), dtype=bool)
    one[pos] = True
    if not _found_where_good_missed(p, bs, one, *good)[pos]:
        return False
    lo = max(int(bounds[0][sid]), start - (k - 1))
    idx = np.arange(lo, q)
    rows = bs.orig[idx]
    left = (rows >= 0) & (np.asarray(p.plainpath[np.maximum(rows, 0)]) == int(p.plainpath[int(bs.orig[pos])]))
    # the good runs' work: at least a window of positions between the leftover and the message
    # (a job refusing to start because of a state file says so right after reading it)
    if q - (lo + int(np.flatnonzero(left)[-1])) - 1 < k:
        return False
    idx = idx[~left]
    h = align.window_hashes(bs.take(idx), role_hash, k)
    if lo != int(bounds[0][sid]):
        h = h[k - 1 :]
    return bool(align.seen_in(h, gh).all())


def _lock_fates(p: Prepared) -> np.ndarray:
    """The rows (indices) to drop: the error-free calls on a file created exclusively (O_CREAT|O_EXCL: a
    `*.lock`, a mkstemp temp) when some runs published it (renamed it over its target) and
    others discarded it (unlinked it), the bad run among the runs that created it.

    Taking a lock and then deciding whether there is anything to write is the protocol's
    normal flow, not a divergence: `git status` always takes index.lock and renames its
    refreshed index over `index` only when it found entries racily clean (a clock question:
    the commit before it in the same second), else it unlinks the lock. The file's creation
    stays (EEXIST on it, a lock left by a crash, is a fault) and so does every error on it
    (a write's ENOSPC, a rename's EACCES): only which clean ending it had drops out, in every
    run alike. Keyed on the normalised path per trace, never on names."""
    none = np.zeros(0, dtype=np.int64)
    excl = codes_where(p.narg_values, lambda v: "O_CREAT" in v and "O_EXCL" in v)
    if not len(excl):
        return none
    n_probes = len(p.probe_values)
    ok = p.errno < 0
    created = np.flatnonzero(code_in(p.narg, excl, len(p.narg_values)) & ok
                             & code_in(p.probe, codes_where(p.probe_values, CREATE_PROBES), n_probes))
    if not len(created):
        return none
    path = np.asarray(p.plainpath)
    created = created[path[created] >= 0]
    paths = unique_ints(path[created].astype(np.int64))
    if not len(paths):
        return none
    on = np.flatnonzero(code_in(path, paths, len(p.npath_values)) & ok)
    # one key per (trace, path): trace numbers from 0 (the bad run is tkey -1)
    width = np.int64(len(p.npath_values) + 1)
    tkey = np.asarray(p.tkey[on]).astype(np.int64) + 1
    key_on = tkey * width + path[on]
    probe_on = p.probe[on]
    published = unique_ints(key_on[code_in(probe_on, codes_where(p.probe_values, PUBLISH_PROBES), n_probes)])
    discarded = unique_ints(key_on[code_in(probe_on, codes_where(p.probe_values, DISCARD_PROBES), n_probes)])
    made = unique_ints((np.asarray(p.tkey[created]).astype(np.int64) + 1) * width + path[created])
    pub, dis = isin(made, published), isin(made, discarded)
    made_path = made % width
    both = unique_ints(made_path[pub & ~dis])
    both = both[isin(both, made_path[dis & ~pub]) & isin(both, made_path[made // width == 0])]
    if not len(both):
        return none
    rows = on[isin(path[on], both)]
    return rows[~in_sorted(rows, created)]  # the creates stay: a create failing is a fault


def _proc_scan_races(p: Prepared) -> np.ndarray:
    """Rows of an error of `PROC_SCAN_ERRNOS` at /proc/<pid> or below in a process whose threads
    made the same call (probe, normalised path) for at least `PROC_SCAN_MIN` different pids: a
    scan meeting a process that exited between its listing and its read, or a kernel thread (no
    exe), see PROC_PID_PATH. The process's threads together: a pool of scanner threads takes
    pids from a shared counter, and which worker meets the kernel threads is timing (one that
    met a single pid, /proc/4/exe, was named)."""
    out = np.zeros(len(p), dtype=bool)
    codes = codes_where(p.errno_values, PROC_SCAN_ERRNOS)
    if not len(codes) or p.raw_path is None:
        return out
    cand = np.flatnonzero(code_in(p.errno, codes, len(p.errno_values)))
    cand = cand[p.plainpath[cand] >= 0]
    # only the few distinct normalised paths under /proc/ (raw paths fetched for those rows only)
    under = [c for c in unique_ints(np.asarray(p.plainpath[cand])).tolist()
             if (p.npath_values[c] or "").startswith("/proc/")]
    cand = cand[isin(np.asarray(p.plainpath[cand]), under)]
    if not len(cand):
        return out
    raw = p.raw_paths(cand).to_pylist()
    cand = cand[[i for i, path in enumerate(raw) if path and PROC_PID_PATH.match(path)]]
    if not len(cand):
        return out
    starts = np.r_[stream_starts(p), len(p)]
    # each stream's process: (trace, pid) of its first row; a stream without a pid is its own
    first = starts[:-1]
    pid = np.asarray(p.pid[first]).astype(np.int64)
    process = np.where(pid >= 0, np.asarray(p.tkey[first]).astype(np.int64) * (1 << 32) + pid,
                       -1 - np.arange(len(first), dtype=np.int64))
    of_cand = process[np.asarray(p.sid[cand])]
    plain = np.asarray(p.plainpath[cand])
    for key in {(int(a), int(b), int(c)) for a, b, c in zip(of_cand, p.probe[cand], plain, strict=True)}:
        pids: set[str] = set()
        for s in np.flatnonzero(process == key[0]).tolist():
            lo, hi = int(starts[s]), int(starts[s + 1])
            at = lo + np.flatnonzero((p.probe[lo:hi] == key[1]) & (np.asarray(p.plainpath[lo:hi]) == key[2]))
            pids |= {m.group(1) for path in p.raw_paths(at).to_pylist() if path and (m := PROC_PID_PATH.match(path))}
            if len(pids) >= PROC_SCAN_MIN:
                out[cand[(of_cand == key[0]) & (p.probe[cand] == key[1]) & (plain == key[2])]] = True
                break
    return out


def _listing_twins(p: Prepared, nb: int) -> np.ndarray:
    """Bad rows at a path no good run has, made of a directory entry new to the diffed run:
    a name N at some place of the (plain normalised) path where one good run made the very
    call with the very outcome (probe, errno) at LISTING_TWINS_MIN or more other names, the
    rest of the path the same. A walk of a directory with one entry more (an interface, a pid,
    a device the host has this time: /proc/sys/net/ipv4/conf/<iface>/..., /sys/class/net/...)
    makes for the new entry the calls, and gets the errors, every entry gets: one more turn
    of the walk, dropped like a retry -- its errors anywhere, its successful calls under
    `KERNEL_LISTINGS` only. A call or an outcome no sibling had (the new entry's file a
    symlink loop: ELOOP where the others' were missing) is no twin and stays."""
    out = np.zeros(len(p), dtype=bool)
    n = len(p)
    if nb == 0 or nb == n:
        return out
    plain = np.asarray(p.plainpath)
    cand = _paths_new_to_bad(plain, nb, len(p.npath_values))
    if not len(cand):
        return out
    n_paths, n_err = np.int64(len(p.npath_values) + 1), np.int64(len(p.errno_values) + 1)

    def call_keys(rows: np.ndarray) -> np.ndarray:  # (probe, errno, plain path) as one int64
        return (p.probe[rows].astype(np.int64) * n_err + (p.errno[rows].astype(np.int64) + 1)) * n_paths + (
            plain[rows] + 1)

    cand_keys = call_keys(cand)
    calls = unique_ints(cand_keys // n_paths)  # the candidates' (probe, errno)
    good = np.flatnonzero(plain[nb:] >= 0) + nb
    good_keys = call_keys(good)
    keep = in_sorted(good_keys // n_paths, calls)
    good, good_keys = good[keep], good_keys[keep]
    tkey = np.asarray(p.tkey[good]).astype(np.int64)
    # per (probe, errno, place, the path's other parts): which names each good trace had there
    names: dict[tuple, dict[int, set[str]]] = {}
    lengths = {len((p.npath_values[int(k % n_paths) - 1] or "").split("/")) for k in unique_ints(cand_keys).tolist()}
    for t in unique_ints(tkey).tolist():
        for key in unique_ints(good_keys[tkey == t]).tolist():
            parts = (p.npath_values[int(key % n_paths) - 1] or "").split("/")
            if len(parts) not in lengths:
                continue
            call = key // n_paths
            for i in range(1, len(parts)):
                names.setdefault((call, i, tuple(parts[:i]), tuple(parts[i + 1:])), {}).setdefault(t, set()).add(parts[i])
    twin_keys = []
    for key in unique_ints(cand_keys).tolist():
        path = p.npath_values[int(key % n_paths) - 1] or ""
        call = key // n_paths
        if call % n_err == 0 and not path.startswith(KERNEL_LISTINGS):
            continue  # a successful call on a file's new entry: its contents may matter (cat d/*)
        parts = path.split("/")
        for i in range(1, len(parts)):
            by_trace = names.get((call, i, tuple(parts[:i]), tuple(parts[i + 1:])), {})
            if any(len(v) >= LISTING_TWINS_MIN and parts[i] not in v for v in by_trace.values()):
                twin_keys.append(key)
                break
    if twin_keys:
        out[cand[isin(cand_keys, np.array(twin_keys, dtype=np.int64))]] = True
    return out


def _sweep_turns(p: Prepared, nb: int, rules: ExpectedErrors) -> np.ndarray:
    """Bad rows of one more turn of a directory sweep, in a run that ended as the good runs did:
    a thread lists a directory D (getdents, successfully), then visits its entries one after
    the other, each visit a block of consecutive calls of the thread on D/<name>; a visit one
    of whose calls fails and all of whose errors are expected (an allowlist entry covers
    them) is one more turn of the walk (the caller asks only when the exit status is the good
    runs'). The HotSpot JVM
    sweeps /tmp/hsperfdata_<user>/ at start: for another JVM's file it opens it, takes a
    non-blocking flock and leaves it on EAGAIN (that JVM is alive) -- whether one runs is the
    host's, and the curated entry covers the EAGAIN but not the open of a path the good runs
    never took. A visit without an error (the dead JVM's file deleted), with an error no entry
    covers, not directly after the listing or another visit of D, of an entry whose raw path a
    good run visited too (the same directory's same file: the good runs explain it, or not), or
    in a run whose exit status changed (a stale lock the program then fails on) stays."""
    out = np.zeros(len(p), dtype=bool)
    if nb == 0 or nb == len(p) or p.raw_path is None:
        return out
    lists = codes_where(p.probe_values, LISTING_PROBES)
    if not len(lists):
        return out
    plain = np.asarray(p.plainpath)
    listed = np.flatnonzero(code_in(p.probe[:nb], lists, len(p.probe_values)) & (p.errno[:nb] < 0) & (plain[:nb] >= 0))
    if not len(listed):
        return out
    # the thread of a row is its stream: rows are grouped by stream, numbered as `sid` is
    starts = np.r_[stream_starts(p), len(p)]
    n_paths = np.int64(len(p.npath_values) + 1)
    listed_sid = np.searchsorted(starts, listed, side="right") - 1
    dirs = set(unique_ints(listed_sid.astype(np.int64) * n_paths + plain[listed]).tolist())  # (thread, directory)
    # a visit's error, in a thread that listed a directory: where a turn is looked for (the
    # plain path may be the good runs' too: /tmp/hsperfdata_root/<n> is also their own file)
    cand = np.flatnonzero((p.errno[:nb] >= 0) & (plain[:nb] >= 0))
    cand_sid = np.searchsorted(starts, cand, side="right") - 1
    keep = isin(cand_sid, listed_sid)
    cand, cand_sid = cand[keep], cand_sid[keep]
    if not len(cand):
        return out
    dir_code = {p.npath_values[c]: c for c in unique_ints(plain[listed]).tolist()}
    list_codes = set(lists.tolist())
    parents: dict[int, int | None] = {}

    def listed_parent(c: int) -> int | None:  # the code of the plain path's directory, when listed
        if c not in parents:
            parents[c] = dir_code.get(os.path.dirname((p.npath_values[c] or "").rstrip("/")))
        return parents[c]

    covered: dict[tuple[int, int, int, int], bool] = {}

    def expected(key: tuple[int, int, int, int]) -> bool:  # (probe, errno, plain path, comm) codes
        if key not in covered:  # a sweep's visits repeat one masked error: match it once
            comm = p.ncomm_values[key[3]] if key[3] >= 0 else None
            covered[key] = rules.match(p.probe_values[key[0]], p.errno_values[key[1]], p.npath_values[key[2]],
                                       comm, comm) is not None
        return covered[key]

    raw_new: np.ndarray | None = None  # bad rows at a raw path no good row has, once a visit qualifies
    done = -1  # the last row of the last visit looked at (candidates come in row order)
    for r, sid in zip(cand.tolist(), cand_sid.tolist(), strict=True):
        if r <= done:
            continue
        path = int(plain[r])
        d = listed_parent(path)
        if d is None or sid * int(n_paths) + d not in dirs:
            continue
        first, end = int(starts[sid]), min(int(starts[sid + 1]), nb)  # the thread's rows
        lo, hi = r, r + 1  # the visit: the thread's consecutive calls on this entry
        while lo > first and plain[lo - 1] == path:
            lo -= 1
        while hi < end and plain[hi] == path:
            hi += 1
        done = hi - 1
        # back to the listing over other entries' visits: nothing else in between
        k = lo - 1
        while k >= first and plain[k] >= 0 and plain[k] != d and listed_parent(int(plain[k])) == d:
            k -= 1
        if k < first or plain[k] != d or int(p.probe[k]) not in list_codes or p.errno[k] >= 0:
            continue
        errs = np.arange(lo, hi)[p.errno[lo:hi] >= 0]
        if not all(expected((int(p.probe[e]), int(p.errno[e]), path, int(p.ncomm[e]))) for e in errs.tolist()):
            continue
        # the entry itself new to the good runs (another JVM's pid): a visit of an entry they
        # visited too is theirs to explain (an `ls` cut off by the recording makes the same
        # visits as the complete run, and its last ones must still line up with the good runs')
        if raw_new is None:
            raw_new = np.zeros(nb, dtype=bool)
            raw_new[_paths_new_to_bad(np.asarray(p.raw_path), nb, len(p.raw_path_values))] = True
        if raw_new[lo:hi].all():
            out[lo:hi] = True
    return out


def _paths_new_to_bad(plain: np.ndarray, nb: int, n_paths: int) -> np.ndarray:
    """The bad rows (0..nb-1) at a plain path (codes 0..n_paths-1, -1 none) no good row has.
    The good rows' paths are marked in a table over the path codes: sorting their million
    codes for the distinct values took ~25 ms of the ~35 `_listing_twins` took when, as
    almost always, no bad row is left. The table's last entry, null's, is never new."""
    in_good = np.zeros(n_paths + 1, dtype=bool)
    in_good[plain[nb:]] = True
    in_good[-1] = True
    return np.flatnonzero(~take(in_good, plain[:nb]))


def _shadowing_find(p: Prepared, nb: int, anomaly: dict[str, Any], good_calls: np.ndarray,
                    good_ok_calls: np.ndarray, n_errnos: np.int64, good_outcomes: np.ndarray) -> int:
    """The first bad row of `anomaly`'s process, before it, that found a file (`FIND_PROBES`,
    success) at a call site where the good runs only failed softly, under a file name the
    good runs found (same call) in another directory; -1 if none. A leftover the good runs
    never found under any name (a cache file) does not qualify."""
    pid, seq = anomaly["process"].get("pid"), anomaly.get("position")
    if pid is None or seq is None or seq < 0:
        return -1
    finds = codes_where(p.probe_values, FIND_PROBES)
    rows = np.flatnonzero(code_in(p.probe[:nb], finds, len(p.probe_values))
                          & (p.errno[:nb] < 0) & (p.plainpath[:nb] >= 0) & (p.pid[:nb] == pid) & (p.seq[:nb] < seq))
    if not len(rows):
        return -1
    calls = _call_keys(p, rows)
    hit = isin(calls, good_calls) & ~isin(calls, good_ok_calls)
    hard = codes_where(p.errno_values, lambda v: v not in SOFT_ERRNOS).astype(np.int64) + 1
    for r in rows[hit][np.argsort(p.seq[rows[hit]], kind="stable")].tolist():
        call = _call_keys(p, np.array([r]))[0]
        if isin(call * n_errnos + hard, good_outcomes).any():
            continue
        name = os.path.basename(p.npath_values[int(p.plainpath[r])] or "")
        good = _good_rows_where((p.probe[nb:] == p.probe[r]) & (p.errno[nb:] < 0), nb)
        good = good[p.plainpath[good] >= 0]
        found = {os.path.basename(p.npath_values[int(c)] or "") for c in unique_ints(np.asarray(p.plainpath[good])).tolist()
                 if c != p.plainpath[r]}
        if name and name in found:
            return int(r)
    return -1


def _cleared_in_between(p: Prepared, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For retry chains (first failed attempt `lo`, success `hi`, same thread and call site):
    whether the first attempt failed with EEXIST and the thread removed that very path
    (`REMOVE_PROBES`, successfully) before the success -- replacing an existing file."""
    out = np.zeros(len(lo), dtype=bool)
    eexist = codes_where(p.errno_values, ("EEXIST",))
    removes = codes_where(p.probe_values, REMOVE_PROBES)
    if not len(eexist) or not len(removes):
        return out
    for i in np.flatnonzero(isin(p.errno[lo], eexist)).tolist():
        between = np.arange(lo[i] + 1, hi[i])
        out[i] = bool((isin(p.probe[between], removes) & (p.errno[between] < 0)
                       & (p.plainpath[between] == p.plainpath[lo[i]]) & (p.sid[between] == p.sid[lo[i]])).any())
    return out


def _parents_made_on_demand(p: Prepared, noise_codes: np.ndarray) -> np.ndarray:
    """Rows (indices) of directories made on demand: a create (`MADE_IN_PARENT_PROBES`; an
    open only with O_CREAT) failing ENOENT whose thread's next call (noise probes passed over)
    is a successful mkdir of that path's parent directory, and whose next call of the same
    probe and flags, within `RETRY_GAP` rows of the mkdir, succeeds in that directory: the
    failed create and the mkdir. Together they are one step, the same as a create that
    found the directory: git writes each loose object into its fan-out directory
    (`objects/ab/`), making it on ENOENT, so whether the directory existed depends on the
    object's hash. A mkdir that fails, a second create that fails, or an ENOENT followed by
    anything but the parent's mkdir stays. A mkdir that is itself made on demand (mkdir -p
    walking up: `a/b` ENOENT, `a` made, `a/b` made) counts as made: levels are resolved
    innermost first."""
    none = np.zeros(0, dtype=np.int64)
    enoent = codes_where(p.errno_values, ("ENOENT",))
    probes = codes_where(p.probe_values, MADE_IN_PARENT_PROBES)
    mkdirs = codes_where(p.probe_values, MKDIR_PROBES)
    if not len(enoent) or not len(mkdirs) or p.raw_path is None:
        return none
    n_probes = len(p.probe_values)
    cand = np.flatnonzero(code_in(p.errno, enoent, len(p.errno_values)))
    cand = cand[code_in(p.probe[cand], probes, n_probes) & (p.plainpath[cand] >= 0) & (p.raw_path[cand] >= 0)]
    opens = code_in(p.probe[cand], codes_where(p.probe_values, CREATE_PROBES), n_probes)
    creating = codes_where(p.narg_values, lambda v: "O_CREAT" in v)
    cand = cand[~opens | code_in(p.narg[cand], creating, len(p.narg_values))]
    if not len(cand):
        return none
    # the rows that count as a thread's next call: not noise, not a step already resolved
    counted = ~code_in(p.probe, noise_codes, n_probes)
    made = np.zeros(len(p), dtype=bool)
    for _ in range(MADE_ON_DEMAND_DEPTH):
        rows = np.flatnonzero(counted & ~made)
        at = np.searchsorted(rows, cand, side="right")
        ok = at < len(rows)
        nxt = np.where(ok, rows[np.minimum(at, len(rows) - 1)], 0)
        ok &= (p.sid[nxt] == p.sid[cand]) & code_in(p.probe[nxt], mkdirs, n_probes) & (p.errno[nxt] < 0)
        ok &= (p.raw_path[nxt] >= 0) & ~made[cand]
        found = False
        for c, m in zip(cand[ok].tolist(), nxt[ok].tolist(), strict=True):
            created = p.raw_path_values[int(p.raw_path[c])]
            parent = p.raw_path_values[int(p.raw_path[m])].rstrip("/")
            if not parent or os.path.dirname(created.rstrip("/")) != parent:
                continue
            if _created_again_in(p, c, m, parent):
                made[c] = made[m] = True
                found = True
        if not found:
            break
    _made_top_down(p, cand[~made[cand]], counted, mkdirs, made)
    return np.flatnonzero(made)


def _created_again_in(p: Prepared, c: int, m: int, parent: str) -> bool:
    """Whether the failed create at row `c` was made again right after the mkdir at row `m`:
    the same call (probe and flags) of the thread within RETRY_GAP rows, its first one,
    succeeding in `parent`, the directory made. A mkstemp-style name is drawn anew for it, so
    the raw names differ and the masked ones may too (a draw that reads as a word)."""
    hi = min(m + RETRY_GAP + 1, len(p))
    again = np.flatnonzero((p.sid[m + 1:hi] == p.sid[c]) & (p.probe[m + 1:hi] == p.probe[c])
                           & (p.narg[m + 1:hi] == p.narg[c]))
    if not len(again):
        return False
    r = m + 1 + int(again[0])
    return bool(p.errno[r] < 0 and p.raw_path[r] >= 0
                and os.path.dirname(p.raw_path_values[int(p.raw_path[r])].rstrip("/")) == parent)


def _made_top_down(p: Prepared, cand: np.ndarray, counted: np.ndarray, mkdirs: np.ndarray, made: np.ndarray) -> None:
    """Directories made on demand from the top down (GNU tar extracting an archive without
    directory entries: a member's create fails ENOENT, then mkdirat of each ancestor, the
    existing ones failing EEXIST, down to its parent, made; then the create again): the failed
    create, the walk's mkdirs and their EEXISTs are one step with the create, marked in `made`.
    Which ancestors already existed follows the archive's order of members, not the program."""
    if not len(cand):
        return
    rows = np.flatnonzero(counted & ~made)
    at = np.searchsorted(rows, cand, side="right")
    ok = at < len(rows)
    nxt = np.where(ok, rows[np.minimum(at, len(rows) - 1)], 0)
    ok &= (p.sid[nxt] == p.sid[cand]) & code_in(p.probe[nxt], mkdirs, len(p.probe_values)) & (p.raw_path[nxt] >= 0)
    mkdir_codes = set(mkdirs.tolist())
    eexist = set(codes_where(p.errno_values, ("EEXIST",)).tolist())
    for c, first in zip(cand[ok].tolist(), at[ok].tolist(), strict=True):
        parent = os.path.dirname(p.raw_path_values[int(p.raw_path[c])].rstrip("/"))
        walk: list[int] = []
        depth = -1
        for m in rows[first:first + MADE_ON_DEMAND_DEPTH].tolist():
            if p.sid[m] != p.sid[c] or int(p.probe[m]) not in mkdir_codes or p.raw_path[m] < 0:
                break
            made_dir = p.raw_path_values[int(p.raw_path[m])].rstrip("/")
            if not made_dir or not (parent == made_dir or parent.startswith(made_dir + "/")) \
                    or made_dir.count("/") <= depth:
                break
            failed = int(p.errno[m])
            if failed >= 0 and failed not in eexist:
                break
            walk.append(m)
            depth = made_dir.count("/")
            if made_dir == parent:
                # the parent itself made here: then the create again, succeeding
                if failed < 0 and _created_again_in(p, c, m, parent):
                    made[c] = True
                    made[walk] = True
                break


def _cache_misses_filled(p: Prepared, good_ok_calls: np.ndarray) -> np.ndarray:
    """Rows (indices) of a cache miss its thread fills: an open for reading (`CREATE_PROBES`
    without O_CREAT) failing ENOENT at a path the same thread then publishes within
    `CACHE_FILL_ROWS` rows -- renames a file onto it (`PUBLISH_PROBES`, the path as the
    target) or creates it (an open with O_CREAT) successfully -- at a call site (call, path)
    no good run opened successfully. Python's bytecode cache (``__pycache__/m.cpython-311.pyc``
    missing, the module compiled, the cache written to a temporary and renamed onto it),
    ccache, a font cache: which entries a run misses follows what it loads, and the fill says
    the miss was only a cache's. Left in, the miss of a module imported on another branch (an
    environment variable choosing the fallback backend) named its region instead of the new
    lookup that opens it. A miss where the good runs found the file is an outcome change and
    stays, filled or not (a state file missing, then written afresh)."""
    none = np.zeros(0, dtype=np.int64)
    enoent = codes_where(p.errno_values, ("ENOENT",))
    opens = codes_where(p.probe_values, CREATE_PROBES)
    if not len(enoent) or not len(opens) or p.raw_path is None:
        return none
    n_probes, n_args = len(p.probe_values), len(p.narg_values)
    creating = codes_where(p.narg_values, lambda v: "O_CREAT" in v)
    publish = codes_where(p.probe_values, PUBLISH_PROBES)
    # one pass over the rows (the errno column), then the few misses only
    cand = np.flatnonzero(code_in(p.errno, enoent, len(p.errno_values)))
    cand = cand[code_in(p.probe[cand], opens, n_probes) & ~code_in(p.narg[cand], creating, n_args)]
    cand = cand[(p.raw_path[cand] >= 0) & (p.plainpath[cand] >= 0)]
    if not len(cand):
        return none
    cand = cand[~isin(_call_keys(p, cand), good_ok_calls)]
    if not len(cand):
        return none
    # the fills: successful renames, and opens with O_CREAT. Only those within
    # CACHE_FILL_ROWS rows after a miss can count, so when the misses are few only those rows
    # are looked at (a pass over the probe column found every open: ~1M on the bench pair).
    after = np.arange(1, CACHE_FILL_ROWS + 1)
    if len(cand) * len(after) < len(p) // 8:
        fills = unique_ints((cand[:, None] + after).ravel())
        fills = fills[fills < len(p)]
        fills = fills[code_in(p.probe[fills], np.concatenate([publish, opens]), n_probes)]
    else:
        fills = np.flatnonzero(code_in(p.probe, np.concatenate([publish, opens]), n_probes))
    fills = fills[(p.errno[fills] < 0) & (code_in(p.probe[fills], publish, n_probes)
                                          | code_in(p.narg[fills], creating, n_args))]
    at = np.searchsorted(fills, cand, side="right")
    nxt = fills[np.minimum(at, max(len(fills) - 1, 0))] if len(fills) else cand
    cand = cand[(at < len(fills)) & (nxt - cand <= CACHE_FILL_ROWS) & (p.sid[nxt] == p.sid[cand])]
    out = []
    for c in cand.tolist():  # misses with a fill of their thread right after them: few
        want = p.raw_path_values[int(p.raw_path[c])]
        near = fills[(fills > c) & (fills <= c + CACHE_FILL_ROWS)]
        for r in near[p.sid[near] == p.sid[c]].tolist():
            moved = bool(code_in(p.probe[r : r + 1], publish, n_probes)[0])
            if (p.value("path2", r) if moved else p.value("path", r)) == want:
                out.append(c)
                break
    return np.array(out, dtype=np.int64)


# Calls that only ask whether a path is there (a cache's existence check, os.path.exists).
EXISTS_PROBES = STAT_PROBES | {"access", "faccessat", "faccessat2"}


def _warm_caches_refilled(p: Prepared, good_ok_calls: np.ndarray) -> np.ndarray:
    """Rows (indices) of a cache miss at a call site the good runs completed (they found the
    cache warm) that its thread then fills by publishing: an existence check (`EXISTS_PROBES`)
    or an open for reading failing ENOENT, followed within `CACHE_FILL_ROWS` rows of the same
    thread by a successful rename (`PUBLISH_PROBES`) of a temporary onto that very path; the
    miss and the error-free rows up to and including the rename. A cache warm in some runs and
    cold in others (an earlier job on the host filled it, or not): the cold run computes what
    the warm one read, and publishes it atomically where the warm run found it; the thread
    then goes on as the warm runs did. Errors in between stay (the fill's own failures), and a
    miss filled some other way (written in place, or not at all: a state file the job starts
    afresh without) stays an outcome change. `_cache_misses_filled` is the same for call sites
    no good run completed (python's bytecode cache of a module only this run imports)."""
    none = np.zeros(0, dtype=np.int64)
    enoent = codes_where(p.errno_values, ("ENOENT",))
    asks = codes_where(p.probe_values, EXISTS_PROBES | CREATE_PROBES)
    publish = codes_where(p.probe_values, PUBLISH_PROBES)
    if not len(enoent) or not len(asks) or not len(publish) or p.raw_path is None or not p.has_column("path2"):
        return none  # (a table without second paths -- schema 1, or none recorded -- has no renames' targets)
    n_probes, n_args = len(p.probe_values), len(p.narg_values)
    # the successful renames first (one pass over the probe column): most runs have none, and
    # a miss counts only with one of its thread's right after it
    fills = np.flatnonzero(code_in(p.probe, publish, n_probes))
    fills = fills[p.errno[fills] < 0]
    if not len(fills):
        return none
    creating = codes_where(p.narg_values, lambda v: "O_CREAT" in v)
    cand = np.flatnonzero(code_in(p.errno, enoent, len(p.errno_values)))
    at = np.searchsorted(fills, cand, side="right")
    nxt = fills[np.minimum(at, len(fills) - 1)]
    cand = cand[(at < len(fills)) & (nxt - cand <= CACHE_FILL_ROWS) & (p.sid[nxt] == p.sid[cand])]
    cand = cand[code_in(p.probe[cand], asks, n_probes) & ~code_in(p.narg[cand], creating, n_args)]
    cand = cand[(p.raw_path[cand] >= 0) & (p.plainpath[cand] >= 0)]
    if not len(cand):
        return none
    cand = cand[isin(_call_keys(p, cand), good_ok_calls)]
    out: list[np.ndarray] = []
    for c in cand.tolist():  # misses with a publish of their thread right after them: few
        want = p.raw_path_values[int(p.raw_path[c])]
        near = fills[(fills > c) & (fills <= c + CACHE_FILL_ROWS)]
        for r in near[p.sid[near] == p.sid[c]].tolist():
            if p.value("path2", r) == want:
                span = np.arange(c + 1, r + 1)
                span = span[(p.sid[span] == p.sid[c]) & (p.errno[span] < 0)]
                out.extend([np.array([c]), span])
                break
    return unique_ints(np.concatenate(out)) if out else none


def _warm_caches_refilled_by_children(p: Prepared, good_ok_calls: np.ndarray) -> np.ndarray:
    """Rows (indices) of a cache miss at a call site the good runs completed that the missing
    process then fills through *child processes* -- a shell script's ``[ -f cache/x ] || {
    mkdir -p cache; sha256sum p > cache/x.tmp && mv cache/x.tmp cache/x; }``, cold in one run
    only: an existence check (`EXISTS_PROBES`) or an open for reading failing ENOENT, then a
    successful rename (`PUBLISH_PROBES`) onto that very path by a child of the missing process
    that started after the miss, within `CACHE_FILL_ROWS` rows of the missing thread. The
    fill is the children the process started between the miss and the publisher, the
    publisher included (mkdir, sha256sum, mv: processes the warm runs never start), and the
    missing thread's rows up to the publisher's last. The miss drops out; so do the fill's
    rows without an error, the missing thread's lookups failing softly (its $PATH search for
    the commands) and its children's soft errors (`SOFT_ERRNOS`: libselinux's statfs
    of /sys/fs/selinux at every coreutils start, glibc's missing locale archive) -- programs a
    warm run never starts have no good run to be compared with, and their fill was published.
    A hard error of a fill's child (EACCES, ENOSPC) stays, and so does everything when nothing
    is published (sha256sum's input missing before `&&`: the miss is then an outcome change),
    but for the miss when the fill failed hard in the cache's directory (`_fills_failed_hard`).
    `_warm_caches_refilled` is the same fill made by the missing thread itself."""
    none = np.zeros(0, dtype=np.int64)
    enoent = codes_where(p.errno_values, ("ENOENT",))
    asks = codes_where(p.probe_values, EXISTS_PROBES | CREATE_PROBES)
    publish = codes_where(p.probe_values, PUBLISH_PROBES)
    if (not len(enoent) or not len(asks) or p.raw_path is None or p.pid is None or p.ppid is None
            or not p.has_column("path2")):
        return none
    n_probes, n_args = len(p.probe_values), len(p.narg_values)
    fills = np.flatnonzero(code_in(p.probe, publish, n_probes))
    fills = fills[p.errno[fills] < 0]  # (none at all: a fill may still have failed hard)
    creating = codes_where(p.narg_values, lambda v: "O_CREAT" in v)
    cand = np.flatnonzero(code_in(p.errno, enoent, len(p.errno_values)))
    cand = cand[code_in(p.probe[cand], asks, n_probes) & ~code_in(p.narg[cand], creating, n_args)]
    cand = cand[(p.raw_path[cand] >= 0) & (p.plainpath[cand] >= 0)]
    if not len(cand):
        return none
    cand = cand[isin(_call_keys(p, cand), good_ok_calls)]
    if not len(cand):
        return none
    # the renames onto a path some candidate missed (their targets read once each)
    wanted = {p.raw_path_values[int(p.raw_path[c])] for c in cand.tolist()}
    onto: dict[str, list[int]] = {}
    for r in fills.tolist():
        target = p.value("path2", r)
        if target in wanted:
            onto.setdefault(target, []).append(r)
    err_class = np.zeros(len(p.errno_values) + 1, dtype=np.int8)  # by errno code, -1 (none) last
    err_class[:-1] = [_error_class(v) for v in p.errno_values]
    out: list[np.ndarray] = []
    if len(wanted) > len(onto):
        out.append(_fills_failed_hard(p, cand, onto, err_class))
    if not onto:
        return unique_ints(np.concatenate(out)) if out else none
    pid, ppid, tkey, seq = (np.asarray(a) for a in (p.pid, p.ppid, p.tkey, p.seq))
    lookups = codes_where(p.probe_values, LOOKUP_PROBES)
    for c in cand.tolist():
        for r in onto.get(p.raw_path_values[int(p.raw_path[c])], ()):
            if tkey[r] != tkey[c] or pid[r] == pid[c] or ppid[r] != pid[c] or seq[r] <= seq[c]:
                continue
            trace = np.flatnonzero(tkey == tkey[c])
            publisher = trace[pid[trace] == pid[r]]
            start, end = seq[publisher].min(), seq[publisher].max()
            mine = trace[p.sid[trace] == p.sid[c]]
            if start <= seq[c] or np.count_nonzero((seq[mine] > seq[c]) & (seq[mine] < start)) > CACHE_FILL_ROWS:
                continue
            # the children the process started from the miss to the publisher (by their first row)
            kids = trace[(ppid[trace] == pid[c]) & (pid[trace] != pid[c])]
            first = {}
            for k, q in zip(pid[kids].tolist(), seq[kids].tolist(), strict=True):
                first[k] = min(q, first.get(k, q))
            fill_pids = [k for k, q in first.items() if seq[c] < q <= start]
            fill = kids[isin(pid[kids], fill_pids)]
            fill = fill[err_class[p.errno[fill]] < 2]
            # (the thread's lookups failing softly are its $PATH search for the commands it
            # starts: /usr/local/bin/mkdir before /usr/bin/mkdir; an open's error stays)
            span = mine[(seq[mine] > seq[c]) & (seq[mine] <= end)]
            span = span[(p.errno[span] < 0) | (code_in(p.probe[span], lookups, n_probes)
                                               & (err_class[p.errno[span]] == 1))]
            out.extend([np.array([c]), span, fill])
            break
    return unique_ints(np.concatenate(out)) if out else none


def _fills_failed_hard(p: Prepared, cand: np.ndarray, onto: dict[str, list[int]], err_class: np.ndarray) -> np.ndarray:
    """Rows (indices) of the cache misses of `cand` that nothing published onto (no key of
    `onto`) whose fill failed with a hard error: within `CACHE_FILL_ROWS` rows of the missing
    thread after the miss, the thread or a child process it started there met a hard error at
    a path in the missed path's directory (the shell's ``> cache/x.tmp`` in an immutable
    cache directory: openat EPERM). The miss, an outcome change, outranked that error in
    their region (5.5 against 4): it was only the cache being cold, the failed fill is what
    went wrong. So did the later misses of the same entry (ENOENT, the reads the fill was for:
    `cat cache/x`), which drop out too. A miss with no such error stays (a fill that failed
    softly: sha256sum's input missing)."""
    hard = np.flatnonzero(err_class[p.errno] == 2)  # one pass over the errno column; then the few
    hard = hard[p.raw_path[hard] >= 0]
    cand = cand[[p.raw_path_values[int(p.raw_path[c])] not in onto for c in cand.tolist()]]
    if not len(hard) or not len(cand):
        return np.zeros(0, dtype=np.int64)
    starts = stream_starts(p)
    h_tkey, h_seq, h_ppid, h_sid = (np.asarray(p.tkey[hard]), np.asarray(p.seq[hard]), np.asarray(p.ppid[hard]),
                                    np.asarray(p.sid[hard]))
    h_start_seq = np.asarray(p.seq[starts[h_sid]])  # when each hard error's thread began
    out: list[int] = []
    for c in cand.tolist():
        sid, seq = p.sid[c], p.seq[c]
        stop = min(c + CACHE_FILL_ROWS, len(p) - 1)
        while p.sid[stop] != sid:  # (the thread's last row, when it ends sooner)
            stop -= 1
        limit = p.seq[stop]
        near = (h_tkey == p.tkey[c]) & (h_seq > seq) & (
            ((h_sid == sid) & (h_seq <= limit))
            | ((h_ppid == p.pid[c]) & (h_start_seq > seq) & (h_start_seq <= limit)))
        want = p.raw_path_values[int(p.raw_path[c])]
        folder = os.path.dirname(want).rstrip("/") + "/"
        if folder != "/" and any(p.raw_path_values[int(p.raw_path[r])].startswith(folder) for r in hard[near].tolist()):
            # the miss, and the later misses of the same entry: the reads the fill was for
            # (`cat cache/x`, another outcome change, in a process of its own)
            later = np.flatnonzero(p.raw_path == p.raw_path[c])
            later = later[(np.asarray(p.tkey[later]) == p.tkey[c]) & (np.asarray(p.seq[later]) >= seq)]
            out.extend(later[p.errno[later] == p.errno[c]].tolist())
    return np.array(out, dtype=np.int64)


# Rows at most between a rotated file's close and its renaming aside (the backups shifted in
# between: an existence check, a removal and a rename for each), and between that rename and
# the file's creation again (see _rotations).
ROTATION_ROWS = 48
REOPEN_ROWS = 4


def _rotations(p: Prepared) -> np.ndarray:
    """Rows (indices) of a writer rotating its file: a successful rename of a path X to a longer
    name beginning with X (``app.log`` to ``app.log.1``; `PUBLISH_PROBES`), the same thread
    creating X again (an open with O_CREAT) within `REOPEN_ROWS` rows after it and having closed
    X within `ROTATION_ROWS` rows before it, every row in between on X or a name beginning with
    X (the backups shifted: existence checks, removals, renames). Those rows drop out when they
    succeed or miss (ENOENT: no such backup yet): a log rotating on size rotates 0, 1 or 2
    times as the run wrote less or more (Python's RotatingFileHandler, a logger's own size
    check). Any other error in the rotation stays (a directory where a backup goes: unlink
    EISDIR, and the rotation then has no rename to be found by)."""
    none = np.zeros(0, dtype=np.int64)
    publish = codes_where(p.probe_values, PUBLISH_PROBES)
    opens = codes_where(p.probe_values, CREATE_PROBES)
    closes = codes_where(p.probe_values, ("close",))
    if (not len(publish) or not len(opens) or not len(closes) or p.raw_path is None
            or not p.has_column("path2")):
        return none
    n_probes, n_args = len(p.probe_values), len(p.narg_values)
    cand = np.flatnonzero(code_in(p.probe, publish, n_probes))
    cand = cand[(p.errno[cand] < 0) & (p.raw_path[cand] >= 0)]
    if not len(cand):
        return none
    creating = codes_where(p.narg_values, lambda v: "O_CREAT" in v)
    enoent = codes_where(p.errno_values, ("ENOENT",))
    # only renames followed closely by a successful create of their thread (vectorised: a trace
    # may hold thousands of renames -- git's objects, a build's outputs -- and few rotations)
    reopened = np.zeros(len(cand), dtype=bool)
    for d in range(1, REOPEN_ROWS + 1):
        a = np.minimum(cand + d, len(p) - 1)
        reopened |= ((cand + d < len(p)) & (p.sid[a] == p.sid[cand]) & code_in(p.probe[a], opens, n_probes)
                     & (p.errno[a] < 0) & code_in(p.narg[a], creating, n_args))
    cand = cand[reopened]
    out: list[np.ndarray] = []
    for r in cand.tolist():  # renames just before a create: few
        x = p.raw_path_values[int(p.raw_path[r])]
        aside = p.value("path2", r)
        if not aside or len(aside) <= len(x) or not aside.startswith(x):
            continue
        sid = p.sid[r]
        after = np.arange(r + 1, min(r + 1 + REOPEN_ROWS, len(p)))
        after = after[(p.sid[after] == sid) & code_in(p.probe[after], opens, n_probes) & (p.errno[after] < 0)
                      & code_in(p.narg[after], creating, n_args)]
        reopen = next((int(a) for a in after.tolist() if p.value("path", a) == x), -1)
        if reopen < 0:
            continue
        start = -1
        for b in range(r - 1, max(r - 1 - ROTATION_ROWS, -1), -1):
            if p.sid[b] != sid:
                break
            path = p.value("path", b)
            if not path or not path.startswith(x):
                break
            if path == x and code_in(p.probe[b : b + 1], closes, n_probes)[0]:
                start = b
                break
        if start < 0:
            continue
        span = np.arange(start, reopen + 1)
        keep = (p.errno[span] >= 0) & ~code_in(p.errno[span], enoent, len(p.errno_values))
        out.append(span[~keep])
    return unique_ints(np.concatenate(out)) if out else none


def _exit_time_stream_syncs(p: Prepared, noise_codes: np.ndarray) -> np.ndarray:
    """Rows (indices) of an exit-time sync of an input stream on a pipe: lseek failing ESPIPE
    as a thread's last call before it exits (its next call, noise probes passed over, is
    exit_group, or it has none). At exit, stdio gives back what an input stream read ahead
    but did not consume (POSIX: the descriptor's offset is set to the stream's position), an
    lseek back by that much; on a pipe it fails ESPIPE. A filter reading its first line with
    fgets and the rest with read(2) has unread data in the stream when the writer had already
    written more than the line when the first read came: timing (log_pipeline_timing_varies,
    under load). An ESPIPE before other work (a program needing a seekable input) stays."""
    none = np.zeros(0, dtype=np.int64)
    espipe = codes_where(p.errno_values, ("ESPIPE",))
    lseeks = codes_where(p.probe_values, ("lseek", "_llseek"))
    if not len(espipe) or not len(lseeks):
        return none
    n_probes = len(p.probe_values)
    cand = np.flatnonzero(code_in(p.errno, espipe, len(p.errno_values)))
    cand = cand[code_in(p.probe[cand], lseeks, n_probes)]
    if not len(cand):
        return none
    counted = np.flatnonzero(~code_in(p.probe, noise_codes, n_probes))
    at = np.searchsorted(counted, cand, side="right")
    nxt = counted[np.minimum(at, len(counted) - 1)]
    last = (at >= len(counted)) | (p.sid[nxt] != p.sid[cand])  # nothing but noise after it in its thread
    exits = codes_where(p.probe_values, ("exit_group",))
    return cand[last | code_in(p.probe[nxt], exits, n_probes)]


def _existing_directories(p: Prepared) -> tuple[np.ndarray, np.ndarray]:
    """Rows of an idempotent mkdir (`mkdir -p`, Python's makedirs(exist_ok=True)) that found
    its directory: mkdir failing EEXIST, then -- the next call of the thread -- a successful
    stat of that path checking it is a directory, where a good run's mkdir created it; (the
    mkdir rows, the stat rows). Whether
    the directory was left by an earlier run is the machine's state, not the program's
    behaviour (a file in its place still shows in what follows: the chdir into it fails)."""
    mkdirs = codes_where(p.probe_values, ("mkdir", "mkdirat"))
    stats = codes_where(p.probe_values, STAT_PROBES)
    eexist = codes_where(p.errno_values, ("EEXIST",))
    if not len(mkdirs) or not len(stats) or not len(eexist):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    cand = np.flatnonzero(code_in(p.errno, eexist, len(p.errno_values)))
    cand = cand[isin(p.probe[cand], mkdirs) & (cand + 1 < len(p)) & (p.plainpath[cand] >= 0)]
    nxt = cand + 1
    checked = (isin(p.probe[nxt], stats) & (p.errno[nxt] < 0) & (p.sid[nxt] == p.sid[cand])
               & (p.plainpath[nxt] == p.plainpath[cand]))
    raced = ~checked & _made_earlier_in_run(p, cand, mkdirs)
    cand, nxt, checked = cand[checked | raced], nxt[checked | raced], checked[checked | raced]
    # only where a good run created the directory (where the good runs found it too, the
    # EEXIST is theirs as well: nothing to reinterpret)
    nb = _bad_row_count(p)
    made = _good_rows_where(code_in(p.probe[nb:], mkdirs, len(p.probe_values)) & (p.errno[nb:] < 0), nb)
    ok = isin(_call_keys(p, cand), _call_keys(p, made))
    return cand[ok], nxt[ok & checked]


def _made_earlier_in_run(p: Prepared, rows: np.ndarray, mkdirs: np.ndarray) -> np.ndarray:
    """For each mkdir row failing EEXIST (`rows`): whether its run made that directory before
    it -- a successful mkdir of the path, earlier in the trace, by any of its threads. Workers
    racing to make one directory (py_compile's os.makedirs under compileall -j, its
    FileExistsError caught, no check after it): which of them makes it is their timing, and
    the losers' EEXIST is the winner's directory. A directory in the path's place before the
    run started (an earlier run's, a file) has no such mkdir: it stays an error."""
    out = np.zeros(len(rows), dtype=bool)
    if not len(rows):
        return out
    path = p.plainpath[rows]
    made = np.flatnonzero(isin(p.plainpath, path) & (p.errno < 0))
    made = made[isin(p.probe[made], mkdirs)]
    if not len(made):
        return out
    tkey = np.asarray(p.tkey[made]).astype(np.int64)
    first: dict[tuple[int, int], int] = {}
    for t, q, seq in zip(tkey.tolist(), p.plainpath[made].tolist(), p.seq[made].tolist(), strict=True):
        if seq < first.get((t, q), seq + 1):
            first[(t, q)] = seq
    for i, (t, q, seq) in enumerate(zip(np.asarray(p.tkey[rows]).astype(np.int64).tolist(), path.tolist(),
                                         p.seq[rows].tolist(), strict=True)):
        out[i] = first.get((t, q), seq) < seq
    return out


def _known_errors_after_new(regions: align.Regions, novel: np.ndarray, b_cls: np.ndarray, b_oc: np.ndarray,
                            weight: np.ndarray) -> None:
    """In a region that opens with an error-free event no good run of its role had (a message
    written, a call on a new path), an error after it that the good runs of the role made as
    well (the same call, path and errno: no novelty) and that changes no outcome there names
    nothing: it is the program's ordinary flow going on, inside the region only because the new
    event shares its window (sqlite3 writing 'UNIQUE constraint failed' mid-load, then its next
    statement's hot-journal check, ENOENT as between any two of the good runs' statements; the
    call also succeeds there while a transaction is open, so no entry covers it). Sets the
    weight of those errors to 0 in place."""
    opens_new = np.flatnonzero(novel[regions.start] & (b_cls[regions.start] == 0))
    n = (regions.end[opens_new] - regions.start[opens_new]).astype(np.int64)  # positions after the opening one
    if not n.sum():
        return
    # every position after the opening event of those regions, as one index array
    pos = np.repeat(regions.start[opens_new] + 1 - np.cumsum(np.r_[0, n[:-1]]), n) + np.arange(n.sum())
    known = (b_cls[pos] > 0) & ~b_oc[pos] & ~novel[pos]
    weight[pos[known]] = 0


def _first_of_cascade(p: Prepared, bs: align.Streams, regions: align.Regions, named: np.ndarray, b_cls: np.ndarray,
                      b_oc: np.ndarray) -> None:
    """A region named by a hard error that changes an outcome (the good runs made that call
    there successfully) which the thread already met, earlier in the region, in the same
    directory (the same call, the same errno) on a name the good runs never had: the earlier
    one is where the run left them -- the first of the cascade (lz4 -m over a read-only
    directory, the first segment that of a host new today: EROFS there, then at each segment
    the good runs also wrote). Names that one, carrying the outcome change. Soft errors (a
    lookup's ENOENT) are left alone: a miss before the one that matters is often a probe."""
    for r in np.flatnonzero(b_oc[named] & (b_cls[named] == 2)).tolist():
        at = int(named[r])
        row = int(bs.orig[at])
        if row < 0 or p.plainpath[row] < 0:
            continue
        lo = int(regions.start[r])
        rows = bs.orig[lo:at]
        same = np.flatnonzero((rows >= 0) & (b_cls[lo:at] == 2) & ~b_oc[lo:at])
        if not len(same):
            continue
        same = same[(p.probe[rows[same]] == p.probe[row]) & (p.errno[rows[same]] == p.errno[row])]
        directory = os.path.dirname(str(p.value("path", row)))
        for q in same.tolist():
            earlier = p.value("path", int(rows[q]))
            if earlier is not None and os.path.dirname(str(earlier)) == directory:
                named[r] = lo + q
                b_oc[lo + q] = True  # (the cascade's outcome change: scored as the named event)
                break


EXIT_PROBES = frozenset({"exit", "exit_group"})
# Errors saying a name is not there: after an empty listing of its directory, a consequence
# (see _empty_listing_cause).
MISSING_NAME_ERRNOS = frozenset({"ENOENT"})
# Successful calls that change a file other processes may be using (see _cause_in_another_process).
CHANGING_CALLS = frozenset({"truncate", "ftruncate", "unlink", "unlinkat", "rename", "renameat", "renameat2"})


def _killed_threads(p: Prepared, bs: align.Streams, regions: align.Regions, named: np.ndarray, max_weight: np.ndarray,
                    recovered: np.ndarray, has_novel: np.ndarray, b_end: np.ndarray) -> None:
    """A region reaching the end of its thread, with no error, no event new to the good runs of
    the role, and no exit call of the thread's own before the end (its last call is an ordinary
    one: a read, a write) is a thread killed by a signal -- strace's `+++ killed by SIGSEGV +++`,
    SIGBUS, the OOM killer's SIGKILL; the recorder sees no signal, only the calls stopping. Its
    known calls before the end are in the region only because the end shares their window:
    the region is named by its end (`(end of thread)`), not by the first of them (a filter in a
    pipeline killed after a read of its input, where the good runs' filter read on). Updates
    `named` in place. A thread still running when its recording stopped has no end token and
    is never one of these. A thread's own `exit` is a noise probe, dropped from its stream, so a
    thread of a multi-threaded process stopping early with nothing new is named by its end
    too -- where it stopped, END's documented meaning; only a process's exit_group stays to say
    it ended by itself."""
    ends = regions.end
    last = bs.orig[np.maximum(ends - 1, 0)]
    cand = ((max_weight == 0) & ~recovered & ~has_novel & (ends == b_end[regions.sid] - 1) & (bs.orig[ends] < 0)
            & (ends > regions.start) & (last >= 0))
    if not cand.any():
        return
    exits = codes_where(p.probe_values, EXIT_PROBES)
    cand &= ~isin(p.probe[np.maximum(last, 0)], exits)
    named[cand] = ends[cand]


def _empty_listing_cause(p: Prepared, empties: _EmptyAnswers, matched_role: list[str], top: dict[str, Any]) -> int:
    """The row of an empty answer (see _EmptyAnswers) of the bad run before the top anomaly, a
    name not found (`MISSING_NAME_ERRNOS`) at a path under the directory it listed (or at the
    file it read): the shell's glob over an empty directory leaves its pattern as it is, and
    cat fails ENOENT on ``incoming/*.csv``; the listing that came back empty is where the run
    left the good runs' way, the error its consequence. Else -1. Return values are read only
    here, for a run whose top anomaly is such an error."""
    hits = empties.rows[empties._hits(matched_role)]
    if not len(hits):
        return -1
    hits = hits[p.seq[hits] < top["position"]]
    path = top["path"].rstrip("/")
    for r in hits[np.argsort(p.seq[hits])].tolist():
        d = (p.value("path", r) or "").rstrip("/")
        if d and (path == d or path.startswith(d + "/")):
            return int(r)
    return -1


def _cause_in_another_process(p: Prepared, nb: int, anomalies: list[dict[str, Any]]) -> None:
    """The top anomaly -- an error at a path, or a thread's end with nothing failed (killed by
    a signal) -- put behind an error-free divergence of *another* process of the bad run that
    made it happen, which then ranks first (its score raised to the top one's; ties go to the
    earliest event). The divergence is a successful call that
    * changed the file the failing thread was using: a truncate, an unlink, a rename, an open
      with O_TRUNC (`CHANGING_CALLS`) at a path the ended thread's process had used before
      (a cleaner truncating a shard a job had mapped: the job dies of SIGBUS touching it), or
      at the very path of the error; or
    * went elsewhere where the good runs touched the error's path at that point (`good_instead`
      holds it): the build step writing its result to the directory its config names, so the
      publish step's cp finds no result where every good run's build had put it.
    The top anomaly is the consequence: what the person needs is the call that made it.
    Updates `anomalies` in place (order and ranks)."""
    if len(anomalies) < 2 or p.pid is None:
        return
    top = anomalies[0]
    ended = top["probe"] == END_PROBE and top["errno"] is None
    if not ended and (top["errno"] is None or not top["npath"]):
        return
    top_pid = top["process"]["pid"]
    used: set[int] | None = None
    for i, a in enumerate(anomalies[1:], start=1):
        row = a["_row"]
        if (a["kind"] != "divergence" or a["errno"] is not None or row < 0 or row >= nb
                or a["process"]["pid"] in (None, top_pid) or not a["npath"]):
            continue
        changing = a["probe"] in CHANGING_CALLS or (
            a["probe"] in FIND_PROBES and "O_TRUNC" in str(p.value("arg", row) or ""))
        if ended:
            if not changing:
                continue
            if used is None:
                mine = np.flatnonzero(p.pid[:nb] == top_pid)
                used = set(unique_ints(p.plainpath[mine]).tolist())
            hit = int(p.plainpath[row]) in used
        else:
            # (going elsewhere: a call at the error's own path that the good runs made there
            # too -- run-parts' stat of the script whose exec then failed, its loop's waits
            # interleaved another way under load -- is the same step, not its cause)
            hit = a["position"] < top["position"] and (
                (changing and a["npath"] == top["npath"])
                or (a["npath"] != top["npath"] and top["npath"] in a["_good_npaths"]))
        if hit:
            a["score"] = max(float(a["score"]), float(top["score"]))
            a["rank"], top["rank"] = top["rank"], a["rank"]
            anomalies.insert(0, anomalies.pop(i))
            return


def _raised_signals(p: Prepared, bs: align.Streams, regions: align.Regions, named: np.ndarray, max_cls: np.ndarray,
                    b_end: np.ndarray) -> None:
    """A region with no error reaching the end of its thread -- its END, no exit call of the
    thread's own -- whose last call, in the region, is a signal sent successfully
    (`SIGNAL_PROBES`) is a thread that signalled itself and died of it: abort() (glibc:
    gettid, getpid, tgkill SIGABRT) after a check failed, raise(), a script's kill of its own
    process group. strace shows `+++ killed by SIGABRT +++` right after that call; the region is
    named by it, not by the first new call of the abort's preamble (gettid says nothing).
    Nothing failed before it, so the region has no error to name. Updates `named` in place."""
    ends = regions.end
    last = bs.orig[np.maximum(ends - 1, 0)]
    cand = ((max_cls == 0) & (ends == b_end[regions.sid] - 1) & (bs.orig[ends] < 0) & (ends - 1 >= regions.start)
            & (last >= 0))
    if not cand.any():
        return
    signals = codes_where(p.probe_values, SIGNAL_PROBES)
    at = np.maximum(last, 0)
    cand &= isin(p.probe[at], signals) & (p.errno[at] < 0)
    named[cand] = ends[cand] - 1


def _fallback_lookups(p: Prepared, bs: align.Streams, soft_change: np.ndarray, novel: np.ndarray) -> np.ndarray:
    """Bad positions that are a fallback lookup: a soft error where the good runs succeeded
    (`soft_change`), answered by the very next event of the thread -- the same call, on a path
    no good run took (`novel`), succeeding: the XDG config missing and the dotfile found. The
    program recovered by itself; the error neither names nor scores its region."""
    out = np.zeros(len(bs), dtype=bool)
    cand = np.flatnonzero(soft_change[:-1])
    if not len(cand):
        return out
    nxt = cand + 1
    row, row2 = bs.orig[cand], bs.orig[nxt]
    ok = (bs.sid[nxt] == bs.sid[cand]) & (row >= 0) & (row2 >= 0) & novel[nxt]
    row, row2 = np.maximum(row, 0), np.maximum(row2, 0)
    ok &= (p.probe[row] == p.probe[row2]) & (p.errno[row2] < 0) & (p.plainpath[row] != p.plainpath[row2])
    out[cand[ok]] = True
    return out


def _timing_reads(p: Prepared) -> np.ndarray:
    """Per row: a successful read of a kernel random device (`RANDOM_DEVICES`), which drops out
    of the streams as getrandom does -- where a reader refills its buffer is timing -- or a
    successful call on a file the allocator reads when it first needs it (`ALLOCATOR_FILES`)."""
    out = np.zeros(len(p.probe), dtype=bool)
    # one Arrow pass over the distinct paths (a Python loop over 143k of them would show)
    watched = sorted(RANDOM_DEVICES | ALLOCATOR_FILES)
    found = numpy_of(pc.fill_null(pc.is_in(p.npath_values.arrow, value_set=pa.array(watched)), False))
    if not found.any():
        return out
    found_paths = p.npath_values.arrow.filter(pa.array(found)).to_pylist()
    codes = np.flatnonzero(found)
    devices = codes[[path in RANDOM_DEVICES for path in found_paths]]
    allocator = codes[[path in ALLOCATOR_FILES for path in found_paths]]
    ok = p.errno < 0
    if len(devices):
        reads = codes_where(p.probe_values, RANDOM_READS)
        out |= code_in(p.probe, reads, len(p.probe_values)) & code_in(p.plainpath, devices, len(p.npath_values))
    if len(allocator):
        out |= code_in(p.plainpath, allocator, len(p.npath_values))
    return out & ok


def _environment_data(p: Prepared) -> np.ndarray:
    """Per row: a successful call on a data file of the run's locale or time zone
    (`ENVIRONMENT_DATA`), which drops out of the streams."""
    values = p.npath_values.arrow
    near = pc.fill_null(pc.or_(pc.starts_with(values, "/usr/"), pc.ends_with(values, "/etc/localtime")), False)
    if not pc.any(near).as_py():
        return np.zeros(len(p.probe), dtype=bool)
    codes = np.flatnonzero(numpy_of(near))
    found = codes[[ENVIRONMENT_DATA.search(v) is not None for v in pc.filter(values, near).to_pylist()]]
    if not len(found):
        return np.zeros(len(p.probe), dtype=bool)
    return code_in(p.plainpath, found, len(p.npath_values)) & (p.errno < 0)


def _only_slept(p: Prepared, sides: tuple[align.Streams, align.Streams], regions: align.Regions,
                max_cls: np.ndarray, gh: np.ndarray, role_hash: np.ndarray, k: int,
                bounds: tuple[tuple, tuple], roles: tuple[list[str], np.ndarray]) -> np.ndarray:
    """Per region: error-free, and, once the successful sleeps and time measurements
    (`TIMING_PROBES`) are left out of its thread and of the good streams of its role, only
    windows those have: the thread slept where the good runs did not, or did not where they did,
    and did nothing else new -- a backoff's sleeps (HotSpot's VM Thread waiting 1 ms at a time
    for a safepoint, in some runs and not others), a periodic task's CPU-time samples (G1's
    service thread, whose first task a slow run's shutdown came before). A sleep followed by a
    call the good runs never made there keeps its
    region. `sides` is (bad, good) streams, `bounds` their (start, end) per stream and `roles`
    (matched role per stream, whether the stream is the bad run's)."""
    out = np.zeros(len(regions), dtype=bool)
    cand = np.flatnonzero(max_cls == 0)
    sleeps = codes_where(p.probe_values, TIMING_PROBES)
    if not len(cand) or not len(sleeps):
        return out
    (bs, gs), (b_bounds, g_bounds), (matched_role, is_bad_stream) = sides, bounds, roles

    def slept(side: align.Streams, lo: int, hi: int) -> np.ndarray:
        rows = side.orig[lo:hi]
        at = np.maximum(rows, 0)
        return (rows >= 0) & code_in(p.probe[at], sleeps, len(p.probe_values)) & (p.errno[at] < 0)

    awake: dict[str, np.ndarray | None] = {}  # role -> window hashes of its good streams without sleeps

    def good_awake(role: str) -> np.ndarray | None:
        if role not in awake:
            parts = []
            for j in np.flatnonzero(~is_bad_stream).tolist():
                if matched_role[j] == role:
                    lo, hi = int(g_bounds[0][j]), int(g_bounds[1][j])
                    asleep = slept(gs, lo, hi)
                    if asleep.any():
                        parts.append(gs.take(_one_turn(gs, lo + np.flatnonzero(~asleep))))
            awake[role] = None if not parts else align.window_hashes(
                align.Streams(*(np.concatenate([getattr(x, f) for x in parts]) for f in ("tok", "sid", "orig"))),
                role_hash, k)
        return awake[role]

    for r in cand.tolist():  # the error-free regions only, each with the windows through it
        sid, start, end = int(regions.sid[r]), int(regions.start[r]), int(regions.end[r])
        first = int(b_bounds[0][sid])
        lo, hi = max(first, start - (k - 1) - SLEPT_CONTEXT), min(int(b_bounds[1][sid]), end + k)
        asleep = slept(bs, lo, hi)
        model = good_awake(matched_role[sid])
        if model is None and not asleep[start - lo : end + 1 - lo].any():
            continue  # no sleep here nor in the good runs of the role: not this rule's
        idx = _one_turn(bs, lo + np.flatnonzero(~asleep))
        before = np.count_nonzero(idx < start)
        if before < k - 1 and lo != first:
            continue  # sleeps all the way back: too little context to tell (kept named)
        # every window ending in the region or in the k-1 positions after it, each with k-1
        # calls before it that are no sleeps (or the stream's start): a window of fewer would
        # be padded as if the stream began there and match any good stream's start
        idx = idx[max(0, before - (k - 1)) :]
        h = align.window_hashes(bs.take(idx), role_hash, k)[idx >= start]
        if not len(h) or (idx[0] != first and before < k - 1):
            continue
        seen = align.seen_in(h, gh)
        if model is not None:
            seen |= align.seen_in(h, model)
        out[r] = bool(seen.all())
    return out


def _one_turn(side: align.Streams, idx: np.ndarray) -> np.ndarray:
    """`idx` without a position whose token repeats the one before it: the sleeps left out, a
    poll loop's checks come together (rsync's wait4(child, WNOHANG), 20 ms sleeps between:
    checked once where the child was gone at the first check, twice where a sleep came
    between), as loop compression folds them in a stream."""
    if len(idx) < 2:
        return idx
    tok = side.tok[idx]
    return idx[np.r_[True, tok[1:] != tok[:-1]]]


def _known_step_elsewhere(sides: tuple[align.Streams, align.Streams], regions: align.Regions, max_cls: np.ndarray,
                          novel: np.ndarray, gh: np.ndarray, role_hash: np.ndarray, k: int,
                          b_bounds: tuple[np.ndarray, np.ndarray], reach: np.ndarray) -> np.ndarray:
    """Per region: error-free, its new events (`novel`: none of its role's good streams has
    them) inside one block of KNOWN_STEP_MIN..KNOWN_STEP_MAX calls (grown by up to k-1 of the region's
    other events each side, or of the calls leading into it: a step's first call may be one the
    thread makes in the good runs as well -- zstd's stat of its input, then the reads its I/O
    thread makes in runs of a larger input) that some good stream made in that very order (on another thread:
    the events' tokens know no role), and without that block its thread did only what the good
    runs of its role did (every window through the gap is one of theirs, a loop the block split
    joined again) -- one more turn of a step the program takes elsewhere: HotSpot's VM Thread,
    as its GC adds a worker, recounting the CPUs (sched_getaffinity, the cgroup's
    cpu.cfs_quota_us and cpu.cfs_period_us) the way the JVM's start did on its main thread, in
    some runs and not others. The caller asks only in a run exiting as the good runs did; a
    block with a call no good stream made there in that order, or after which the thread goes
    on otherwise, keeps its region. Past `reach` (Teardowns.good_reach: where every good
    thread of the role was cut off by its process's exit, the bad thread's own exit after) the
    thread is judged by nothing: no good run's thread of its role went that far."""
    bs, gs = sides
    out = np.zeros(len(regions), dtype=bool)
    for r in np.flatnonzero(max_cls == 0).tolist():
        sid, start, end = int(regions.sid[r]), int(regions.start[r]), int(regions.end[r])
        first, last = int(b_bounds[0][sid]), min(int(b_bounds[1][sid]), int(reach[sid]))
        new = start + np.flatnonzero(novel[start : min(end + 1, last)])
        if not len(new) or int(new[-1]) - int(new[0]) >= KNOWN_STEP_MAX:
            continue
        # the smallest blocks first: the new events alone, then up to k-1 of the region's
        # others (or of the calls before it) on each side
        blocks = [(int(new[0]) - before, int(new[-1]) + 1 + after)
                  for grow in range(2 * (k - 1) + 1) for before in range(min(grow, k - 1) + 1)
                  if (after := grow - before) <= k - 1]
        out[r] = any(_without_block_seen(bs, (lo_b, hi_b), (first, last), (start, end), gh, role_hash, k)
                     and _occurs_in(bs.tok[lo_b:hi_b], gs.tok)
                     for lo_b, hi_b in blocks
                     if lo_b >= max(first, start - (k - 1)) and hi_b <= end + 1 and hi_b - lo_b >= KNOWN_STEP_MIN
                     and not (bs.orig[lo_b:hi_b] < 0).any())
    return out


def _without_block_seen(bs: align.Streams, block: tuple[int, int], stream: tuple[int, int],
                        region: tuple[int, int], gh: np.ndarray, role_hash: np.ndarray, k: int) -> bool:
    """Every window of the thread ending in its `region` or k-1 events past it, once `block` is
    left out, is one of the good runs' (`gh`; see _known_step_elsewhere)."""
    (lo_b, hi_b), (first, last), (start, end) = block, stream, region
    lo, hi = max(first, min(start, lo_b) - (k - 1)), min(last, end + k)
    # a loop the block split (a sleep before it, one after): one turn again
    idx = _one_turn(bs, np.r_[np.arange(lo, lo_b), np.arange(hi_b, hi)])
    if np.count_nonzero(idx < lo_b) < k - 1 and lo != first:
        return False  # (too little context: a window of fewer would be padded as a stream's start)
    h = align.window_hashes(bs.take(idx), role_hash, k)[idx >= start]
    return bool(len(h)) and bool(align.seen_in(h, gh).all())


def _occurs_in(block: np.ndarray, tokens: np.ndarray) -> bool:
    """The token sequence `block` occurs contiguously in `tokens` (streams back to back: a
    match across two of them would need the END token between them, never in the caller's
    blocks of real calls; only a stream the recording cut off has no END)."""
    at = np.flatnonzero(tokens[: len(tokens) - len(block) + 1] == block[0])
    for j in range(1, len(block)):
        if not len(at):
            return False
        at = at[tokens[at + j] == block[j]]
    return bool(len(at))


def _with_previous(bs: align.Streams, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of the events at positions `pos` and of the event before each in its thread,
    and whether both are real calls of one thread (not the stream's first event, no END)."""
    prev = np.maximum(pos - 1, 0)
    row, prow = bs.orig[pos], bs.orig[prev]
    ok = (pos > 0) & (row >= 0) & (prow >= 0) & (bs.sid[prev] == bs.sid[pos])
    return np.maximum(row, 0), np.maximum(prow, 0), ok


def _extra_entries(p: Prepared, bs: align.Streams, regions: align.Regions, novel: np.ndarray) -> np.ndarray:
    """Per region: every new event (`novel`) in it is a successful lookup (LOOKUP_PROBES) right
    after the same call on another name in its thread (or after such a new one) -- one more turn
    of a loop over a listing the good runs walked too: another session's mount in df's table, a
    file more in a scanned directory. A lookup that fails, a call that opens, reads or changes
    anything, or a first lookup of its kind in the thread is not one."""
    pos = np.flatnonzero(novel)
    if not len(pos) or not len(regions):
        return np.zeros(len(regions), dtype=bool)
    row, prow, ok = _with_previous(bs, pos)
    lookups = codes_where(p.probe_values, LOOKUP_PROBES)
    ok &= isin(p.probe[row], lookups) & (p.probe[prow] == p.probe[row])
    ok &= (p.errno[row] < 0) & (p.errno[prow] < 0) & (p.plainpath[row] >= 0) & (p.plainpath[row] != p.plainpath[prow])
    return _news_all(bs, regions, pos, ok)


# What a signal handler does between the signal and the re-raise that ends its process (coreutils
# sort's handler for SIGPIPE: its temporary files removed, the default action restored, then
# raise(): rt_sigaction, gettid, getpid, tgkill, rt_sigreturn), at most RERAISE_TAIL calls.
RERAISE_CALLS = SIGNAL_PROBES | {"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "gettid", "getpid",
                                 "getppid", "unlink", "unlinkat", "close", "munmap", "write"}
RERAISE_TAIL = 32


def _sigpipe_deaths(p: Prepared, s_tkey: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Threads killed by SIGPIPE: a stream whose last call is a write (`WRITING_PROBES`) failing
    EPIPE -- the reader had gone, and the default action of the signal that comes with the
    error ended the process there (a writer that handles it goes on, or exits) -- or one to a
    pipe that returned what it had written when the reader left, or one whose handler of the
    signal cleaned up and raised it again after the failed write (`RERAISE_CALLS`: sort).
    Returns the failed (or last) writes' rows, the handler's rows after them, and per stream
    whether its process is one of them (every thread of a process the signal killed stops
    where it stood): `cut -f1 log | head -3` -- whether cut finished its file before head had
    its three lines, or was killed after 1 or 17 writes, is timing."""
    none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(len(s_tkey), dtype=bool))
    epipe = codes_where(p.errno_values, ("EPIPE",))
    if not len(s_tkey):
        return none
    starts = stream_starts(p)
    last = np.r_[starts[1:], len(p)] - 1
    writing = codes_where(p.probe_values, WRITING_PROBES)
    writes = code_in(p.probe[last], writing, len(p.probe_values))
    hit = writes & code_in(p.errno[last], epipe, len(p.errno_values))
    # ... or a write to a pipe that succeeded and was its thread's last call: a writer blocked
    # on a full pipe whose reader left wakes with what it wrote so far, and the next write's
    # signal kills it before that write's return is recorded (cat | grep -m2)
    ended_writing = writes & (p.errno[last] < 0) & (p.plainpath[last] >= 0)
    if ended_writing.any():  # (the few paths those writes name, not every distinct path)
        codes = unique_ints(p.plainpath[last[ended_writing]])
        pipes = codes[[str(p.npath_values[int(c)]).startswith("pipe:") for c in codes.tolist()]]
        hit |= ended_writing & isin(p.plainpath[last], pipes)
    write_rows = last.copy()
    tails: list[np.ndarray] = []
    # ... or a handler's re-raise after the failed write: the stream's last EPIPE write, then
    # only the handler's calls, one of them a signal sent
    n_probes = len(p.probe_values)
    reraise = codes_where(p.probe_values, RERAISE_CALLS)
    ending_in_handler = np.flatnonzero(~hit & code_in(p.probe[last], reraise, n_probes) & (len(epipe) > 0))
    if len(ending_in_handler):
        senders = codes_where(p.probe_values, SIGNAL_PROBES)
        for i in ending_in_handler.tolist():
            end = int(last[i])
            lo = max(int(starts[i]), end - RERAISE_TAIL)
            probes, errnos = p.probe[lo:end + 1], p.errno[lo:end + 1]
            written = code_in(probes, writing, n_probes)
            handler = code_in(probes, reraise, n_probes) & ~(written & (errnos >= 0))
            before = np.flatnonzero(~handler)  # the handler's calls run from after the last of these
            if not len(before):
                continue
            k = int(before[-1])
            if not (written[k] and code_in(errnos[k:k + 1], epipe, len(p.errno_values))[0]) \
                    or not code_in(probes[k + 1:], senders, n_probes).any():
                continue
            hit[i] = True
            write_rows[i] = lo + k
            tails.append(np.arange(lo + k + 1, end + 1, dtype=np.int64))
    if not hit.any():
        return none
    # (trace, pid) as one key: the trace number (-1 for the bad run) above the 32-bit pid
    process = (s_tkey.astype(np.int64) + 1) * (1 << 32) + np.asarray(p.pid[starts]).astype(np.int64)
    tail_rows = np.concatenate(tails) if tails else np.zeros(0, dtype=np.int64)
    return write_rows[hit].astype(np.int64), tail_rows, isin(process, unique_ints(process[hit]))


def _descriptor_plumbing(p: Prepared, bs: align.Streams, regions: align.Regions, novel: np.ndarray) -> np.ndarray:
    """Per region: it has new events (`novel`), each a successful call that plumbs descriptors
    (`PLUMBING_PROBES`: a pipe made, a descriptor duplicated onto another, one closed) -- make
    -j2's second job given a broken pipe for stdin (dup2 before its exec) when the first was
    still running, and none when it had finished."""
    pos = np.flatnonzero(novel)
    if not len(pos) or not len(regions):
        return np.zeros(len(regions), dtype=bool)
    row = bs.orig[pos]
    ok = row >= 0
    row = np.maximum(row, 0)
    ok &= code_in(p.probe[row], codes_where(p.probe_values, PLUMBING_PROBES), len(p.probe_values)) & (p.errno[row] < 0)
    return regions.max_over(novel) & _news_all(bs, regions, pos, ok)


def _attributes_retouched(p: Prepared, bs: align.Streams, regions: align.Regions, novel: np.ndarray) -> np.ndarray:
    """Per region: it has new events (`novel`), each a successful call setting the attributes
    of a path (`ATTRIBUTE_PROBES`) right after the thread's successful check of the same path
    (`STAT_PROBES`, or another such setting after it) -- rsync's generator stats each
    directory at the end and resets its time only when it differs: whether the receiver's last
    rename into it came after the generator's touch-up during the transfer is timing."""
    pos = np.flatnonzero(novel)
    if not len(pos) or not len(regions):
        return np.zeros(len(regions), dtype=bool)
    row, prow, ok = _with_previous(bs, pos)
    n_probes = len(p.probe_values)
    setters = codes_where(p.probe_values, ATTRIBUTE_PROBES)
    checks = codes_where(p.probe_values, STAT_PROBES | ATTRIBUTE_PROBES)
    ok &= code_in(p.probe[row], setters, n_probes) & code_in(p.probe[prow], checks, n_probes)
    ok &= (p.errno[row] < 0) & (p.errno[prow] < 0) & (p.plainpath[row] >= 0) & (p.plainpath[row] == p.plainpath[prow])
    return regions.max_over(novel) & _news_all(bs, regions, pos, ok)


def _news_all(bs: align.Streams, regions: align.Regions, pos: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Per region: whether every new event in it (positions `pos`) is one of its kind (`ok`,
    per position of `pos`); true for a region without new events."""
    misfit = np.zeros(len(bs), dtype=bool)
    misfit[pos[~ok]] = True
    return ~regions.max_over(misfit)


def _recovered_fallbacks(p: Prepared, rows: _Rows, bs: align.Streams, regions: align.Regions, named: np.ndarray,
                         b_cls: np.ndarray, novel: np.ndarray, recovered: np.ndarray, nb: int,
                         families: dict[tuple[str, str], frozenset[str]],
                         good_messages: _GoodMessages | None = None) -> np.ndarray:
    """Per region: a *recovered fallback* -- a call the diffed run's environment refused (its
    only error, one no good run of the role met), whose role the thread then gave to another
    means and went on with the good runs' work: the run did what they did by another route
    (io_uring refused by a container profile, then an epoll loop; copy_file_range EXDEV across
    two file systems, then read/write; mq_open O_CREAT|O_EXCL EEXIST, then a join of the queue).

    After the failed call, every event of the region is one of: the same call on the same path
    succeeding (the join); a call of the failed call's curated family (`fallback_calls.yaml`:
    (call, errno) -> the calls that take its role), error-free, on the failed call's paths when
    it has any and writing no message; a descriptor released (`DESCRIPTOR_RELEASES`: the
    alternative's descriptors closed); an event the good runs of the role have; the end of the
    thread. At least one event takes the failed call's role, and the thread reaches the good
    runs' behaviour again after it: the region re-joins it, or it reaches the end with a known
    event after the alternative and its own exit last. The thread writes no more messages than
    a good run's thread (stdout/stderr/tty/pipe writes at those call sites): a fault that is
    reported and skipped writes one; nor a message no good run's thread wrote there (the
    same count, other words: a fallback that ends in 'short checkpoint' instead of 'ok',
    compared with digit runs as <n>: `_GoodMessages`). The caller asks only when the run exits as the good runs
    did (a fault that stops the job exits otherwise: a pid file of a live process). An event
    after the failed call that is none of these (reading the pid file found, kill(pid, 0), a
    message, an early end) keeps the region named."""
    out = np.zeros(len(regions), dtype=bool)
    cand = np.flatnonzero(b_cls[named] > 0)
    if not len(cand):
        return out
    release = frozenset(codes_where(p.probe_values, DESCRIPTOR_RELEASES).tolist())
    exits = frozenset(codes_where(p.probe_values, EXIT_PROBES).tolist())
    for r in cand.tolist():
        e, lo, hi = int(named[r]), int(regions.start[r]), int(regions.end[r]) + 1
        row = int(bs.orig[e])
        if row < 0 or not novel[e] or hi - e > FALLBACK_TAIL or np.count_nonzero(b_cls[lo:hi]) != 1:
            continue
        failed = rows.event(row)
        family = families.get((failed["probe"], failed["errno"]), frozenset())
        own = {x for x in (failed["path"], failed["path2"]) if x}
        took_over, went_on, last_row = False, False, -1
        for q in range(e + 1, hi):
            o = int(bs.orig[q])
            if o < 0:
                continue  # the end of the thread
            last_row = o
            if p.errno[o] >= 0:
                break
            ev = rows.event(o)
            if ev["probe"] == failed["probe"] and failed["path"] is not None and ev["path"] == failed["path"]:
                took_over, went_on = True, False  # the same call, the same path: the join
            elif ev["probe"] in family and not ev.get("output") and (not own or ev["path"] is None
                                                                    or ev["path"] in own):
                took_over, went_on = True, False
            elif int(p.probe[o]) in release:
                continue
            elif not novel[q]:
                went_on = went_on or took_over
            else:
                break
        else:
            if not took_over:
                continue
            if not recovered[r] and not (went_on and last_row >= 0 and int(p.probe[last_row]) in exits):
                continue
            out[r] = not _more_messages(p, nb, row) and not (good_messages and good_messages.new_message(p, row))
    return out


class _GoodMessages:
    """The messages (events column ``output``) the good runs wrote, read on demand: the diff
    loads the good side without its output bytes (they are asked about only here, for a
    region about to pass as a recovered fallback). Good source row i is the prepared table's
    row nb + i (prepare_both concatenates [bad, good])."""

    def __init__(self, good: Any, nb: int):
        self.good, self.nb = good, nb
        self._by_site: dict[int, set[str]] | None = None
        self.usable = True

    def _sites(self, p: Prepared) -> dict[int, set[str]]:
        if self._by_site is None:
            self._by_site = {}
            col = load_table(self.good, skip=tuple(c for c in ANALYSIS_COLUMNS if c != "output")).column("output")
            # (another row count: the good side is not the prepared table's tail -- say nothing)
            self.usable = p.order is not None and len(col) == p.table.num_rows - self.nb
            if not self.usable or col.null_count == len(col):
                return self._by_site
            table_rows = np.flatnonzero(numpy_of(col.is_valid()))
            where = np.full(len(col), -1, dtype=np.int64)  # good source row -> prepared row
            good_rows = np.arange(self.nb, len(p), dtype=np.int64)
            src = np.asarray(p.order)[good_rows] - self.nb
            ok = (src >= 0) & (src < len(col))
            where[src[ok]] = good_rows[ok]
            rows = where[table_rows]
            texts = col.take(pa.array(table_rows)).to_pylist()
            for key, text in zip(_call_keys(p, rows[rows >= 0]).tolist(), np.array(texts, dtype=object)[rows >= 0],
                                 strict=True):
                self._by_site.setdefault(key, set()).add(_DIGITS.sub("<n>", text))
        return self._by_site

    def new_message(self, p: Prepared, row: int) -> bool:
        """Whether the thread of bad row `row` wrote, at some call site, a message (digit runs
        as <n>) no good run wrote there."""
        if p.order is None or "output" not in p.table.column_names:
            return False
        col = p.table.column("output")
        if col.null_count == len(col):
            return False
        written = np.flatnonzero(numpy_of(col.is_valid())[p.order[:self.nb]])
        mine = written[(p.tid[written] == p.tid[row]) & (p.pid[written] == p.pid[row])]
        if not len(mine):
            return False
        sites = self._sites(p)
        return self.usable and any(_DIGITS.sub("<n>", p.value("output", int(m)) or "") not in sites.get(int(key), ())
                   for m, key in zip(mine.tolist(), _call_keys(p, mine).tolist(), strict=True))


def _more_messages(p: Prepared, nb: int, row: int) -> bool:
    """Whether the thread of bad row `row` wrote more messages (stdout/stderr/tty/pipe writes:
    the events column ``output``) at their call sites than any good run's thread did there."""
    if p.order is None or "output" not in p.table.column_names:
        return False
    col = p.table.column("output")
    if col.null_count == len(col):
        return False
    written = np.flatnonzero(numpy_of(col.is_valid())[p.order[:nb]])
    mine = written[(p.tid[written] == p.tid[row]) & (p.pid[written] == p.pid[row])]
    if not len(mine):
        return False
    keys = _call_keys(p, mine)
    good = _good_rows_where(code_in(p.probe[nb:], p.probe[mine], len(p.probe_values)), nb)
    good = good[isin(_call_keys(p, good), keys)]
    if not len(good):
        return True
    thread = np.asarray(p.tkey[good]).astype(np.int64) * np.int64(1 << 32) + np.asarray(p.tid[good]).astype(np.int64)
    return len(mine) > int(np.unique(thread, return_counts=True)[1].max())


def _killed(p: Prepared, bs: align.Streams, named: np.ndarray, recovered: np.ndarray) -> np.ndarray:
    """Per region: named by the end of its thread, which its last call was no exit of its own
    -- a thread killed by a signal (see `_killed_threads`)."""
    end = (bs.orig[named] < 0) & ~recovered & (named > 0)
    last = bs.orig[np.maximum(named - 1, 0)]
    end &= (last >= 0) & (bs.sid[np.maximum(named - 1, 0)] == bs.sid[named])
    return end & ~isin(p.probe[np.maximum(last, 0)], codes_where(p.probe_values, EXIT_PROBES))


def _demote_consequences(p: Prepared, bs: align.Streams, named: np.ndarray, region_end: np.ndarray,
                         max_cls: np.ndarray, recovered: np.ndarray, b_start: np.ndarray, score: np.ndarray,
                         hard_change: np.ndarray, killed: np.ndarray, outcomes: EventColumns) -> None:
    """An error saying the other end went away (`PEER_ERRNOS`: EPIPE, ECONNREFUSED, ...) is a
    consequence when another process of the bad run failed -- without recovering, or with a
    hard error at a call the good runs completed, or with any error there right before its
    thread ended (`hard_change`) -- before its region ended: it
    is scored as a soft error without the outcome-change bonus, so the cause ranks first. A
    region's end, not the named call, is compared: a writer's blocked write enters before the
    reader fails and returns EPIPE after; a client refused while the server starts keeps being
    refused after the server died.

    A thread of another process *killed* (`killed`: named by its end, no error of its own --
    the pipeline's filter dying of SIGSEGV) is such a cause when it died before the error
    returned, and the error then ranks below the death. Sequence numbers cannot say that: they
    order calls by entry, and the writer's blocked write entered before the filter's last read
    in some runs, after it in others. Times can: the death came after its thread's last call
    returned (`ts_ns + latency_ns`), and the kernel answers EPIPE only after the reader is gone,
    so the error's return at or after that time says the death may have caused it."""
    rows = bs.orig[named]
    errno = np.where(rows >= 0, p.errno[np.maximum(rows, 0)], -1)
    _demote_killed_waits(p, named, rows, errno, max_cls, recovered, hard_change, score, outcomes)
    codes = codes_where(p.errno_values, PEER_ERRNOS)
    peer = isin(errno, codes) & (max_cls > 0)
    if not peer.any():
        return
    pid = p.pid[bs.orig[b_start[bs.sid[named]]]]  # each stream's first position is a real row
    seq = p.seq[np.maximum(rows, 0)]
    ended = _seq_of(bs, region_end, p.seq)
    # failed: without recovering, or with a hard error where the good runs succeeded (grep
    # unable to read its patterns exits the way a good grep does, but the pipe's reader is gone)
    fatal = (((max_cls > 0) & ~recovered) | hard_change) & ~peer
    killed = killed & ~peer
    returned = None
    if killed.any():  # when each peer error returned and each killed thread's last call did
        last = bs.orig[np.maximum(named - 1, 0)]
        ask = np.where(killed, last, np.where(peer, rows, -1))
        returned = np.where(ask >= 0, _returned_at(p, ask, outcomes), -1)
    for r in np.flatnonzero(peer):
        other = pid != pid[r]
        deaths = killed & other & (returned[r] >= returned) if returned is not None else killed & False
        if (fatal & other & (seq < ended[r])).any() or deaths.any():
            score[r] = SEVERITY[1] + (0.0 if recovered[r] else NOT_RECOVERED_BONUS)
        if deaths.any():  # below the death that caused it
            score[r] = min(score[r], float(score[deaths].max()) - SEVERITY[0] / 2)


def _demote_killed_waits(p: Prepared, named: np.ndarray, rows: np.ndarray, errno: np.ndarray, max_cls: np.ndarray,
                         recovered: np.ndarray, hard_change: np.ndarray, score: np.ndarray,
                         outcomes: EventColumns) -> None:
    """A wait interrupted by a signal (EINTR, ERESTART*: `_abandoned_waits`) that returned after
    another process of the bad run failed (without recovering, or a hard error where the good
    runs succeeded) ranks below that failure: the process was killed in its wait by whoever
    gave up -- perf's workload child blocked on its go pipe, killed once perf's counters were
    refused (real_fortyfifth). Sequence numbers order calls by entry, and the wait entered long
    before; its return (`ts_ns + latency_ns`) came after the failure's."""
    codes = codes_where(p.errno_values, _interrupted)
    waits = isin(errno, codes) & (max_cls > 0) if len(codes) else np.zeros(len(named), dtype=bool)
    if not waits.any():
        return
    fatal = (((max_cls > 0) & ~recovered) | hard_change) & ~waits & (rows >= 0)
    if not fatal.any():
        return
    returned = _returned_at(p, rows, outcomes)
    pid = p.pid[np.maximum(rows, 0)]
    for r in np.flatnonzero(waits & (rows >= 0)).tolist():
        causes = fatal & (pid != pid[r]) & (returned <= returned[r])
        if causes.any():
            score[r] = min(score[r], float(score[causes].max()) - SEVERITY[0] / 2)


def _returned_at(p: Prepared, rows: np.ndarray, outcomes: EventColumns) -> np.ndarray:
    """When each of `rows` (-1: none, read as row 0) returned: ts_ns + latency_ns, in source
    order through p.order (the outcome columns are not in the prepared rows)."""
    src = np.asarray(p.order)[np.maximum(rows, 0)]
    ts = numpy_of(pc.fill_null(outcomes.column("ts_ns"), 0))[src]
    return ts + numpy_of(pc.fill_null(outcomes.column("latency_ns"), 0))[src]


# Calls that reap a child, and the calls that make one (their return value: its pid).
CHILD_WAITS = frozenset({"wait4", "waitid", "waitpid"})
CHILD_MAKERS = frozenset({"clone", "clone3", "fork", "vfork"})


def _first_of_repeats(p: Prepared, bs: align.Streams, regions: align.Regions, named: np.ndarray,
                      errors: np.ndarray, score: np.ndarray) -> None:
    """Regions named (`errors`) by the same failed call (probe, errno) in one thread on paths of
    one directory are one failure met again: each takes the group's highest score, so the first
    ranks first (c_rehash on a read-only certs volume: the first link's EROFS, after which it
    went on, and the second's, after which it gave up -- the second only scored the give-up).
    A failure the thread got past at once at the same path (`_handled_at_once`: sqlite opening
    its database read-only after the read-write open's EACCES) is no such first: it was dealt
    with, the later one was not."""
    at = np.flatnonzero(errors)
    if len(at) < 2:
        return
    rows = bs.orig[named[at]]
    releases = frozenset(codes_where(p.probe_values, DESCRIPTOR_RELEASES).tolist())
    groups: dict[tuple[int, int, int, str], list[int]] = {}
    for r, row in zip(at.tolist(), rows.tolist(), strict=True):
        if row < 0 or p.plainpath[row] < 0 or _handled_at_once(p, row, releases):
            continue
        directory = p.npath_values[int(p.plainpath[row])].rsplit("/", 1)[0]
        groups.setdefault((int(regions.sid[r]), int(p.probe[row]), int(p.errno[row]), directory), []).append(r)
    for members in groups.values():
        if len(members) > 1:
            score[members] = score[members].max()


def _handled_at_once(p: Prepared, row: int, releases: frozenset[int]) -> bool:
    """A call of the thread at the same path succeeded within RETRY_GAP rows after the failed
    `row` (rows are in stream order: a thread's rows run together). Giving the descriptor back
    is no such call: shutil closing both files after the sendfile that filled the disk
    (real_fortysixth's `copytree_tmpfs_fills_late`) dealt with nothing (`releases`: their probe
    codes)."""
    for q in range(row + 1, min(len(p.tid), row + 1 + RETRY_GAP)):
        if p.tid[q] != p.tid[row] or p.tkey[q] != p.tkey[row]:
            return False
        if p.plainpath[q] == p.plainpath[row] and p.errno[q] < 0 and int(p.probe[q]) not in releases:
            return True
    return False


def _after_failed_child(p: Prepared, bs: align.Streams, regions: align.Regions, named: np.ndarray,
                        error_free: np.ndarray, failing: np.ndarray, score: np.ndarray, b_start: np.ndarray,
                        outcomes: EventColumns, nb: int, k: int) -> None:
    """A region named by an error-free event (`error_free`) whose thread reaped a child within
    the `k` events before it -- a successful wait4/waitid -- after a region with an error
    (`failing`: within `k` events of its thread's end -- the child went from its error to its
    exit, no more work done) in a process that thread's process made (a descendant:
    clone/fork return values) began: the parent only reacted to how the child ended (``sh -e`` exiting instead
    of its next command after ``renice -p`` of a pid that is gone failed ESRCH). Tokens carry
    no exit status, so the reaction is an error-free divergence that never re-joins and
    scores above the child's soft error at a call without a path (no call site, so no
    outcome-change bonus); it is scored just below the child's error instead, so the cause
    ranks first. A child's error that is a fallback the child recovered from is a reordering
    (not in `failing`) and demotes nothing."""
    cand = np.flatnonzero(error_free)
    if not len(cand) or not failing.any():
        return
    waits = codes_where(p.probe_values, CHILD_WAITS)
    makers = codes_where(p.probe_values, CHILD_MAKERS)
    if not len(waits) or not len(makers):
        return
    bad_pid = np.asarray(p.pid[np.arange(nb)])
    made = np.flatnonzero(isin(p.probe[:nb], makers) & (p.errno[:nb] < 0))
    if not len(made):
        return
    ret = numpy_of(pc.fill_null(outcomes.column("ret"), -1))[np.asarray(p.order)[made]]
    children: dict[int, set[int]] = {}
    for parent, child in zip(bad_pid[made].tolist(), ret.tolist(), strict=True):
        if child > 0 and child != parent:
            children.setdefault(parent, set()).add(child)
    region_pid = bad_pid[bs.orig[b_start[regions.sid]]]  # each stream's first position is a real row
    started = _seq_of(bs, regions.start, p.seq)
    fail_idx = np.flatnonzero(failing)
    for r in cand.tolist():
        lo, start = max(int(b_start[regions.sid[r]]), int(regions.start[r]) - k), int(regions.start[r])
        before = bs.orig[lo:start]
        before = before[before >= 0]
        if not (isin(p.probe[before], waits) & (p.errno[before] < 0)).any():
            continue
        descendants, todo = set(), [int(region_pid[r])]
        while todo:
            for c in children.get(todo.pop(), ()):
                if c not in descendants:
                    descendants.add(c)
                    todo.append(c)
        hit = fail_idx[isin(region_pid[fail_idx], list(descendants)) & (started[fail_idx] < started[r])]
        if len(hit):
            score[r] = min(float(score[r]), float(score[hit].max()) - SEVERITY[0] / 2)


class _TimedOutWaits:
    """Waits for a descriptor (`TIMEOUT_WAITS`) of the bad run that timed out: returned 0 after
    blocking `TIMED_OUT_MIN_NS` or more, in a thread whose role no good run ever saw time out.

    Their tokens cannot show it -- a token has no return value, and these calls are noise
    probes, dropped from the streams -- so an error-free divergence right after one (the
    program's reaction to the timeout: its message, a close, the exit) would otherwise name
    the reaction. A collector that is stopped, a service whose accept queue is full, a server
    that reads the request and never answers: the strace of each shows the poll returning 0.
    Return values and latencies are read for the waits only, and only when a region asks."""

    def __init__(self, p: Prepared, outcomes: EventColumns, nb: int):
        self.rows = np.flatnonzero(code_in(p.probe, codes_where(p.probe_values, TIMEOUT_WAITS),
                                           len(p.probe_values)))
        self.sid = p.sid[self.rows]
        self.p, self.outcomes, self.nb = p, outcomes, nb
        self.timed: np.ndarray | None = None  # per wait row: timed out (read on first use)
        self.waited: dict[int, float] = {}  # timed-out row -> milliseconds it waited
        self.timer_roles: set[str] = set()  # roles whose good runs' waits expired on a timer

    def _hits(self, matched_role: list[str]) -> np.ndarray:
        if self.timed is None:
            src = self.p.order[self.rows]
            ret = numpy_of(pc.fill_null(self.outcomes.column("ret"), -1))[src]
            lat = numpy_of(pc.fill_null(self.outcomes.column("latency_ns"), 0))[src]
            timed = (ret == 0) & (lat >= TIMED_OUT_MIN_NS)
            self.waited = dict(zip(self.rows[timed].tolist(), (lat[timed] / 1e6).round(1).tolist(), strict=True))
            good = self.rows >= self.nb
            good_roles = {matched_role[int(j)] for j in self.sid[timed & good]}
            self.timer_roles = {matched_role[int(j)] for j in self.sid[(ret == 0) & (lat >= TIMER_EXPIRY_MIN_NS) & good]}
            self.timed = timed & (self.rows < self.nb) & np.array(
                [matched_role[int(j)] not in good_roles for j in self.sid], dtype=bool)
        return self.timed

    def openings(self, bs: align.Streams, regions: align.Regions, b_start: np.ndarray, seq_rows: np.ndarray,
                 matched_role: list[str], k: int, asked: np.ndarray, reach: int | None = None) -> np.ndarray:
        """Per region (where `asked`): the row of the first timed-out wait of its stream among
        the k events (`reach`, if given) before its start (a window of the model: the events a
        timeout is followed by -- a close, a message -- can match one by chance, the timeout
        itself never can) and its first event (its END: the thread's end); else -1."""
        out = np.full(len(regions), -1, dtype=np.int64)
        asked = asked & isin(regions.sid, self.sid)  # regions in a thread that waited at all
        if not asked.any():
            return out
        timed = self._hits(matched_role)
        if not timed.any():
            return out
        rows, sids, seqs = self.rows[timed], self.sid[timed], seq_rows[self.rows[timed]]
        for r in np.flatnonzero(asked & isin(regions.sid, sids)).tolist():  # in a thread that timed out
            sid, start = int(regions.sid[r]), int(regions.start[r])
            back = start - (k if reach is None else reach)
            lo = int(_seq_of(bs, np.array([back]), seq_rows)[0]) if back >= b_start[sid] else -1
            hi = int(seq_rows[bs.orig[start]]) if bs.orig[start] >= 0 else np.iinfo(np.int64).max
            hit = np.flatnonzero((sids == sid) & (seqs > lo) & (seqs < hi))
            if len(hit):
                out[r] = int(rows[hit[np.argmin(seqs[hit])]])
        return out

    def on_timers(self, rows: np.ndarray, matched_role: list[str]) -> np.ndarray:
        """Per timed-out wait row (of `openings`; -1: none): its thread's role waited for a
        timer in the good runs too -- some wait of theirs returned nothing ready after
        blocking `TIMER_EXPIRY_MIN_NS` or more, the program's own timers (a server answering
        each request after a random delay): how long this one waited is how the timers fell."""
        found = rows >= 0
        out = np.zeros(len(rows), dtype=bool)
        if found.any() and self.timer_roles:
            sids = self.sid[np.searchsorted(self.rows, rows[found])]  # (p.sid is released by now)
            out[found] = [matched_role[int(j)] in self.timer_roles for j in sids]
        return out


class _EmptyAnswers(_TimedOutWaits):
    """A thread's first read of a file (`FIRST_READ_PROBES`) returning 0, or its first listing
    of a directory (`LISTING_PROBES`) returning nothing but "." and "..", in the bad run, at a
    call site (role, call, plain normalised path) where a good run's thread made such a first
    call and none of them found it empty: the file or the directory had content in every good
    run and nothing in this one (a manifest its generator never wrote a line to, a staging
    directory a copy step left empty). The call succeeded; only its return value says so, and
    a token has none -- so the error-free divergence right after it (the program's message,
    the work it skips) would otherwise name the program's reaction instead. Named the way a
    wait that timed out is (see _TimedOutWaits.openings). A later read returning 0 is the end
    of the data, every run's; a first one the good runs saw empty too is the program's way.
    So is a listing whose content, in every good run, was only other processes' files the
    thread found held and left alone (`_foreign_content`): JVMs running beside the good runs
    when HotSpot swept /tmp/hsperfdata_<user>/, none beside this one.
    Return values are read for these calls only, and only when a region asks."""

    def __init__(self, p: Prepared, outcomes: EventColumns, nb: int):
        # every successful read or listing at a path (one pass over the probe column); which is
        # its thread's first at that path, and at a file, is worked out when a region asks
        self.reads = codes_where(p.probe_values, FIRST_READ_PROBES)
        self.listings = codes_where(p.probe_values, LISTING_PROBES)
        rows = np.flatnonzero(code_in(p.probe, np.concatenate([self.reads, self.listings]), len(p.probe_values)))
        self.rows = rows[(p.errno[rows] < 0) & (p.plainpath[rows] >= 0)]
        self.sid = p.sid[self.rows]
        self.p, self.outcomes, self.nb = p, outcomes, nb
        self.row_sid = p.sid  # (released from `p` before a region asks: a thread's rows are a run of them)
        self.timed = None
        self.waited = {}  # (no wait: nothing timed)

    def _hits(self, matched_role: list[str]) -> np.ndarray:
        if self.timed is None:
            p, rows, sid = self.p, self.rows, self.sid
            self.timed = np.zeros(len(rows), dtype=bool)
            # each thread's first call of its kind at its path (seq orders a thread's rows)
            order = np.lexsort((p.seq[rows], p.plainpath[rows], p.probe[rows], sid))
            srt = rows[order]
            head = np.ones(len(srt), dtype=bool)
            head[1:] = ((sid[order][1:] != sid[order][:-1]) | (p.probe[srt[1:]] != p.probe[srt[:-1]])
                        | (p.plainpath[srt[1:]] != p.plainpath[srt[:-1]]))
            first = order[head]  # indices into rows
            # at a file or a directory: a path, not a pipe, a socket or a device
            codes = unique_ints(p.plainpath[rows[first]])
            files = codes[[v.startswith("/") and not v.startswith("/dev/") for v in
                           (p.npath_values[int(c)] for c in codes)]] if len(codes) else codes
            first = first[isin(p.plainpath[rows[first]], files)]
            if not len(first):
                return self.timed
            ret = numpy_of(pc.fill_null(self.outcomes.column("ret"), -1))[p.order[rows[first]]]
            listing = isin(p.probe[rows[first]], self.listings)
            empty = np.where(listing, (ret >= 0) & (ret <= EMPTY_LISTING_BYTES), ret == 0)
            # call sites keyed by (role, call, path): roles numbered per stream
            names: dict[str, int] = {}
            role_of = np.array([names.setdefault(r, len(names)) for r in matched_role], dtype=np.int64)
            key = ((role_of[sid[first]] * (len(p.probe_values) + 1) + p.probe[rows[first]]) * (len(p.npath_values) + 1)
                   + p.plainpath[rows[first]])
            good = rows[first] >= self.nb
            hit = empty & ~good & isin(key, key[good]) & ~isin(key, key[good & empty])
            if hit.any() and (good & listing).any():
                # a listing whose every good run found only other processes' files: no answer
                with_content = good & ~empty
                foreign = np.zeros(len(first), dtype=bool)
                for i in np.flatnonzero(with_content & listing & isin(key, key[hit])).tolist():
                    foreign[i] = self._foreign_content(int(rows[first[i]]))
                hit &= isin(key, key[with_content & ~foreign])
            self.timed[first[hit]] = True
        return self.timed

    def _foreign_content(self, row: int) -> bool:
        """The entries the thread went on to touch after the listing at `row` (calls under the
        listed directory, up to its next listing there) were only looked at -- opened, checked,
        a lock tried (LOOK_ONLY_PROBES) -- and some lock was refused: files another live process
        holds, which the thread leaves alone."""
        p, sid = self.p, self.row_sid
        directory = p.npath_values[int(p.plainpath[row])] + "/"
        locks = set(codes_where(p.probe_values, LOCK_PROBES).tolist())
        held = set(codes_where(p.errno_values, LOCK_HELD_ERRNOS).tolist())
        touched = refused = False
        for r in range(row + 1, min(len(sid), row + WALK_GAP)):
            if sid[r] != sid[row] or (p.plainpath[r] == p.plainpath[row] and p.probe[r] == p.probe[row]):
                break  # the thread's end, or its next listing of the directory
            path = p.npath_values[int(p.plainpath[r])] if p.plainpath[r] >= 0 else None
            if path is None or not path.startswith(directory):
                continue
            if p.probe_values[int(p.probe[r])] not in LOOK_ONLY_PROBES:
                return False  # an entry used: read, written, removed, mapped
            touched = True
            refused |= int(p.probe[r]) in locks and int(p.errno[r]) in held
        return touched and refused


class _KillsOnlyHere(_TimedOutWaits):
    """Checked kills (see _Teardowns) the bad run sent from a role whose good runs sent none:
    a supervisor whose child was still running when it decided to end it -- its deadline (read
    from a config) passed, a health check said stalled. A checked kill is dropped from the
    streams as timing (a pool's terminate finding its workers gone or not), so the sender's
    reaction after it (its message, its exit with another status) would name the region
    instead. Named the way a wait that timed out is (see _TimedOutWaits.openings), for a region
    of the sender that never re-joins the good runs: a kill that was only timing leaves the
    sender doing what the good runs did next."""

    def __init__(self, p: Prepared, teardown: _Teardowns, nb: int):
        self.rows = np.sort(teardown.checked)
        self.sid = p.sid[self.rows]
        self.p, self.nb = p, nb
        self.timed = None
        self.waited = {}

    def _hits(self, matched_role: list[str]) -> np.ndarray:
        if self.timed is None:
            good = self.rows >= self.nb
            roles = {matched_role[int(j)] for j in self.sid[good]}
            self.timed = ~good & np.array([matched_role[int(j)] not in roles for j in self.sid], dtype=bool)
        return self.timed


def _abandoned_waits(p: Prepared, nb: int, bad_err: np.ndarray, good_ok_calls: np.ndarray,
                     good_outcomes: np.ndarray, n_errnos: np.int64) -> np.ndarray:
    """Bad rows of a call interrupted by a signal (EINTR, ERESTART*) at a call site (probe,
    plain normalised path) the good runs completed and never saw interrupted, which the
    thread never completes afterwards: it gave up waiting (flock -w's own timer) or was killed
    in the wait (timeout's SIGTERM in an open of a FIFO nobody writes). Interrupted calls are
    routine when they are restarted and complete (the curated EINTR/ERESTART* entries), or
    when the good runs were interrupted there too; abandoned, they are where the run stopped."""
    out = np.zeros(len(p), dtype=bool)
    codes = codes_where(p.errno_values, _interrupted)
    cand = bad_err[isin(p.errno[bad_err], codes)] if len(codes) else bad_err[:0]
    if not len(cand):
        return out
    calls = _call_keys(p, cand)
    ok = isin(calls, good_ok_calls) & ~isin(calls * n_errnos + (p.errno[cand] + 1), good_outcomes)
    for r, call in zip(cand[ok].tolist(), calls[ok].tolist(), strict=True):  # few
        later = np.flatnonzero(p.sid[r + 1 : nb] == p.sid[r]) + r + 1
        done = later[p.errno[later] < 0]
        out[r] = not bool(len(done)) or not bool((_call_keys(p, done) == call).any())
    return out


def _interrupted(errno: str) -> bool:
    """An errno saying a signal interrupted the call (EINTR, the kernel's ERESTART*)."""
    return errno == "EINTR" or errno.startswith("ERESTART")


def _killed_in_waits(p: Prepared, nb: int, err_any: np.ndarray) -> np.ndarray:
    """Bad rows of a call without a path interrupted by a signal (EINTR, ERESTART*) that is
    its thread's last call, in a run a signal ended (its exit status 128 + the signal, which no
    good run had: the caller checks), at a call the good runs of the process's name made and
    completed, never interrupted: the run was killed there (kill -9 of a job stuck in its
    nanosleep). `_abandoned_waits` judges the calls with a path; without one there is no call
    site, so the thread's end and the run's death stand in for it."""
    out = np.zeros(len(p), dtype=bool)
    codes = codes_where(p.errno_values, _interrupted)
    if not len(codes):
        return out
    cand = err_any[(err_any < nb) & (p.plainpath[err_any] < 0)]
    cand = cand[isin(p.errno[cand], codes)]
    # the thread's last row (rows of a thread run together)
    cand = cand[(cand + 1 >= nb) | (p.sid[np.minimum(cand + 1, len(p) - 1)] != p.sid[cand])]
    if not len(cand):
        return out
    good = _good_rows_where(isin(p.probe[nb:], unique_ints(p.probe[cand])), nb)

    def key(rows: np.ndarray) -> np.ndarray:  # (call, process name)
        return (p.probe[rows].astype(np.int64) * np.int64(len(p.ncomm_values) + 1)
                + np.asarray(p.ncomm[rows]).astype(np.int64))

    good_keys = key(good)
    completed = unique_ints(good_keys[p.errno[good] < 0])
    interrupted = unique_ints(good_keys[isin(p.errno[good], codes)])
    cand_keys = key(cand)
    out[cand[isin(cand_keys, completed) & ~isin(cand_keys, interrupted)]] = True
    return out


def _lost_children(p: Prepared, nb: int) -> np.ndarray:
    """Bad rows of a wait for one child (wait4(pid), waitid(P_PID/P_PIDFD): the recorder's
    arg "pid") failing ECHILD, of a call whose waits for one child never failed in the good
    runs and returned there at least once: the child was reaped behind the waiter's back
    (SIGCHLD ignored by whoever started it, so the kernel reaped it; another waiter). The
    curated ECHILD entry is for a reaper's wait for any child finding none left; a call whose
    waits for one child the good runs saw fail too is left to it. (Polls and blocking waits are
    one: whether a pool's join polls or blocks is timing.) A wait whose child the process's own
    reaper returned is a success by then (`_reaped_by_own_reaper`), not a candidate."""
    out = np.zeros(len(p), dtype=bool)
    one = codes_where(p.narg_values, {"pid"})
    echild = codes_where(p.errno_values, {"ECHILD"})
    if not len(one) or not len(echild):
        return out
    cand = np.flatnonzero(isin(p.narg[:nb], one) & isin(p.errno[:nb], echild))  # (no path: not in bad_err)
    if not len(cand):
        return out
    good = nb + np.flatnonzero(isin(p.narg[nb:], one))
    returned = unique_ints(p.probe[good[p.errno[good] < 0]])
    failed = unique_ints(p.probe[good[p.errno[good] >= 0]])
    out[cand[isin(p.probe[cand], returned) & ~isin(p.probe[cand], failed)]] = True
    return out


def _reaped_by_own_reaper(p: Prepared, outcomes: EventColumns) -> tuple[np.ndarray, np.ndarray]:
    """(rows of a wait for one child failing ECHILD that its process's own reaper made
    fail, rows of that reaper's waits that returned the child), in the bad run and the good
    runs alike (rsync's generator and sender poll wait4(pid, WNOHANG) between 20 ms sleeps while
    their SIGCHLD handler reaps: which gets the child differs run to run, and a good run's
    failed poll taken as it came, learned as routine and dropped, left the diffed run's taken
    one a call no good run made). A wait for one child
    (wait4(pid), waitid(P_PID): the recorder's arg "pid") finds its child gone when the
    process had already reaped, itself, every child it made before the wait (clone/fork return
    values, all returned by its own successful waits), at least one by a wait for *any* child
    (a SIGCHLD handler's waitpid(-1, WNOHANG)) that no wait for one child returned: the child
    ended before the main line waited, and the handler got there first. Which of the two
    reaps it is the child's timing, so the failed wait is taken for the success it stands for
    and the handler's reaping wait drops out -- the thread then reads like a run in which the
    main line reaped the child and the handler found none left. A child the kernel reaped
    (SIGCHLD ignored) was returned by no wait, and a pid that was never the process's child (a
    daemon that double-forked) leaves every wait for any child accounted for: both stay
    (`_lost_children`). Few rows: the loop is over the failed waits."""
    none = np.zeros(0, dtype=np.int64)
    one = codes_where(p.narg_values, {"pid"})
    echild = codes_where(p.errno_values, {"ECHILD"})
    waits = codes_where(p.probe_values, CHILD_WAITS)
    makers = codes_where(p.probe_values, CHILD_MAKERS)
    if not len(one) or not len(echild) or not len(waits) or not len(makers):
        return none, none
    cand = np.flatnonzero(code_in(p.errno, echild, len(p.errno_values)))  # (errors are few: the rest on them)
    cand = cand[isin(p.narg[cand], one) & isin(p.probe[cand], waits)]
    if not len(cand):
        return none, none
    # a process of a run: (trace, pid) -- runs reuse pids
    pid = np.asarray(p.pid).astype(np.int64)
    proc = np.asarray(p.tkey).astype(np.int64) * np.int64(1 << 32) + pid
    seq = np.asarray(p.seq)
    rows = np.flatnonzero(code_in(p.probe, np.r_[makers, waits], len(p.probe_values)) & (p.errno < 0))
    rows = rows[isin(proc[rows], proc[cand])]
    if not len(rows):
        return none, none
    ret = numpy_of(pc.fill_null(outcomes.column("ret"), -1))[np.asarray(p.order)[rows]]
    is_wait = isin(p.probe[rows], waits)
    for_one = is_wait & isin(p.narg[rows], one)
    hit, reapers = [], []
    for c in cand.tolist():
        mine = (proc[rows] == proc[c]) & (seq[rows] < seq[c]) & (ret > 0)
        made = {int(r) for r in ret[mine & ~is_wait].tolist()} - {int(pid[c])}
        by_one = {int(r) for r in ret[mine & for_one].tolist()}
        by_any = {int(r) for r in ret[mine & is_wait & ~for_one].tolist()}
        if made and made <= (by_one | by_any) and by_any - by_one:
            hit.append(c)
            reapers.extend(rows[mine & is_wait & ~for_one & isin(ret, list(by_any - by_one))].tolist())
    return np.array(hit, dtype=np.int64), unique_ints(np.array(reapers, dtype=np.int64))


def _retries_given_up(p: Prepared, nb: int, bad_err: np.ndarray, good_ok_calls: np.ndarray) -> np.ndarray:
    """Bad rows of a retry loop that never got past its call: a contention errno
    (`CONTENTION_ERRNOS`: EAGAIN) at a call site (probe, plain normalised path) the good runs
    completed, failed at least `GIVE_UP_MIN` times by one thread that never completes that
    call. The good runs retried there too and got the lock, so the allowlist learned the errno
    as routine; retried without end (a lock its hung holder never lets go), it is where the run
    stopped, and no entry covers it."""
    out = np.zeros(len(p), dtype=bool)
    codes = codes_where(p.errno_values, CONTENTION_ERRNOS)
    cand = bad_err[isin(p.errno[bad_err], codes)] if len(codes) else bad_err[:0]
    if not len(cand):
        return out
    calls = _call_keys(p, cand)
    ok = isin(calls, good_ok_calls)
    cand, calls = cand[ok], calls[ok]
    sids = np.asarray(p.sid[cand]).astype(np.int64)
    for sid, call in {(int(a), int(b)) for a, b in zip(sids.tolist(), calls.tolist(), strict=True)}:  # few
        rows = cand[(sids == sid) & (calls == call)]
        if len(rows) < GIVE_UP_MIN:
            continue
        thread = np.flatnonzero(np.asarray(p.sid[:nb]) == sid)
        done = thread[p.errno[thread] < 0]
        if not (len(done) and (_call_keys(p, done) == call).any()):
            out[rows] = True
    return out


def _pathless_retries_given_up(p: Prepared, nb: int, err_any: np.ndarray) -> np.ndarray:
    """Bad rows of a retry loop at a call without a path that ended refused: per bad thread and
    probe, the trailing run of contention errors (`CONTENTION_ERRNOS`) -- the thread's last
    calls of that probe, none succeeding after them -- where every good run had that (probe,
    errno) in a process of the same name and ended its calls of that probe there with a
    success. The good runs met the limit and got past it (sigqueue retried after a drain,
    io_setup halved until the kernel took it), so the allowlist learned the errno as routine;
    the bad run's last attempt failed, and it is where the run stopped. Called for a run that
    exits with another status only: how a loop of a run that did not fail ends is timing."""
    out = np.zeros(len(p), dtype=bool)
    codes = codes_where(p.errno_values, CONTENTION_ERRNOS | FALLBACK_ERRNOS)
    if not len(codes):
        return out
    cand = err_any[(p.plainpath[err_any] < 0) & code_in(p.errno[err_any], codes, len(p.errno_values))]
    bad_cand = cand[cand < nb]
    if not len(bad_cand):
        return out
    good_traces = unique_ints(np.asarray(p.tkey[nb:]).astype(np.int64))
    for probe, comm in {(int(a), int(b)) for a, b in zip(p.probe[bad_cand].tolist(),
                                                           np.asarray(p.ncomm[bad_cand]).tolist(), strict=True)}:
        rows = np.flatnonzero((p.probe == probe) & (np.asarray(p.ncomm) == comm))
        good = rows[rows >= nb]
        good_failed = good[code_in(p.errno[good], codes, len(p.errno_values))]
        failed_in = unique_ints(np.asarray(p.tkey[good_failed]).astype(np.int64))
        if len(failed_in) < len(good_traces):
            continue  # a good run that never met it: not a limit every run meets
        tkey = np.asarray(p.tkey[good]).astype(np.int64)
        if any(p.errno[good[tkey == t][-1]] >= 0 for t in good_traces.tolist()):
            continue  # a good run ended refused there too: how such a loop ends is no sign
        bad = rows[rows < nb]
        for sid in unique_ints(p.sid[bad]).tolist():
            thread = bad[p.sid[bad] == sid]
            refused = code_in(p.errno[thread], codes, len(p.errno_values))
            ok_at = np.flatnonzero(~refused)
            streak = thread[(ok_at[-1] + 1 if len(ok_at) else 0):]
            out[streak] = True
    return out


def _given_up_cause(p: Prepared, bs: align.Streams, pos: int, message_row: int, given_up: np.ndarray,
                    noise: frozenset[int], k: int) -> int:
    """The bad row of the call without a path the thread gave up retrying (`given_up`, see
    _pathless_retries_given_up) right before the run's message near bad position `pos` (or
    right before its thread's exit, no message near) -- else -1. Its contention errno is timing
    to `_allowlisted_cause`; a retry loop given up is not."""
    row = int(bs.orig[pos])
    if message_row >= 0 and (row == message_row or _near(p, message_row, bs, pos, 4 * k)):
        anchor = message_row
    elif row >= 0 and p.probe_values[int(p.probe[row])] in ("exit_group", "exit"):
        anchor = row
    else:
        return -1
    q = _error_before(p, anchor, np.zeros(0, dtype=np.int64), noise)
    return q if q >= 0 and given_up[q] else -1


def _catalog_lookups(p: Prepared, bs: align.Streams) -> np.ndarray:
    """Bad positions whose path is a gettext message catalog (`MESSAGE_CATALOG`)."""
    # Arrow finds the few candidate paths: the ~10^5 distinct paths are never made Python
    # strings (a list of them was the diff's peak memory, ~20 MiB, for a million events)
    near = np.flatnonzero(numpy_of(pc.fill_null(pc.match_substring(p.npath_values.arrow, "LC_MESSAGES/"), False)))
    codes = [i for i in near.tolist() if MESSAGE_CATALOG.search(p.npath_values[i])]
    rows = bs.orig
    if not codes:
        return np.zeros(len(bs), dtype=bool)
    plain = np.where(rows >= 0, p.plainpath[np.maximum(rows, 0)], -1)
    return isin(plain, codes) & (rows >= 0)


def _last_output(p: Prepared, nb: int) -> int:
    """The bad row that wrote last to stdout/stderr/a tty/a pipe (the events column output),
    -1 when the bad run wrote nothing: when the run exits with a status no good run had, what
    it said last is why (an error message)."""
    if p.order is None or "output" not in p.table.column_names:
        return -1
    col = p.table.column("output")
    if col.null_count == len(col):
        return -1
    written = np.flatnonzero(numpy_of(col.is_valid())[p.order[:nb]])
    return int(written[np.argmax(p.seq[written])]) if len(written) else -1


def _message_after(p: Prepared, bs: align.Streams, row: int, start: int, seq_rows: np.ndarray) -> bool:
    """Whether bad row `row` (the run's last message) is its thread's, at or after bad position
    `start` (a region running to the thread's end: the message is inside it)."""
    at = int(bs.orig[start])
    return at >= 0 and int(p.tid[at]) == int(p.tid[row]) and int(seq_rows[row]) >= int(seq_rows[at])


def _search_went_on(p: Prepared, bs: align.Streams, pos: int) -> bool:
    """Whether bad position `pos` is one more turn of a search: a successful lookup
    (LOOKUP_PROBES) right after the same call on another path in its thread (the next directory
    of a search path, where the good runs had found what they looked for)."""
    if pos < 1 or bs.sid[pos - 1] != bs.sid[pos]:
        return False
    row, prev = int(bs.orig[pos]), int(bs.orig[pos - 1])
    if row < 0 or prev < 0:
        return False
    return (p.probe_values[int(p.probe[row])] in LOOKUP_PROBES and p.probe[row] == p.probe[prev]
            and p.errno[row] < 0 and p.errno[prev] < 0 and p.plainpath[row] >= 0
            and p.plainpath[row] != p.plainpath[prev])


def _source_reread(p: Prepared, bs: align.Streams, pos: int, start: int) -> bool:
    """Whether bad position `pos` is an error-free open (CREATE_PROBES) of a path its stream
    (from bad position `start`, the stream's first) already opened without error: a file read
    again -- Python's traceback reopens the script and every module of its frames to quote
    their lines (linecache), after the interpreter read them to run them."""
    row = int(bs.orig[pos])
    if row < 0 or p.errno[row] >= 0 or p.plainpath[row] < 0:
        return False
    opens = codes_where(p.probe_values, CREATE_PROBES)
    if not isin(p.probe[row], opens):
        return False
    before = bs.orig[start:pos]
    before = before[before >= 0]
    return bool(np.any((p.plainpath[before] == p.plainpath[row]) & (p.errno[before] < 0)
                       & isin(p.probe[before], opens)))


def _threaded(p: Prepared, bs: align.Streams, pos: int, b_start: np.ndarray, nb: int) -> bool:
    """Whether bad position `pos` is in a process the bad run has more than one thread of."""
    at = int(bs.orig[pos])
    if at < 0:
        return False
    heads = unique_ints(b_start[b_start < len(bs)])  # (an empty stream shares the next one's start)
    rows = bs.orig[heads]
    rows = rows[(rows >= 0) & (rows < nb)]
    return int(np.count_nonzero(np.asarray(p.pid[rows]) == int(p.pid[at]))) > 1


def _says_nothing(ev: dict[str, Any]) -> bool:
    """An event with no error, no path and no output: exit_group, a signal mask, the end of a
    thread; or a descriptor duplicated without error (a redirection being set up)."""
    return ev["errno"] is None and not ev.get("output") and (ev["path"] is None or ev["probe"] in DESCRIPTOR_PLUMBING)


def _near(p: Prepared, row: int, bs: align.Streams, pos: int, window: int) -> bool:
    """Whether bad row `row` is an event of the same thread as bad position `pos`, at most
    `window` rows before or after it (rows of a stream are consecutive, in order)."""
    at = int(bs.orig[pos]) if bs.orig[pos] >= 0 else (int(bs.orig[pos - 1]) + 1 if pos > 0 else -1)
    if at < 0 or not 0 < abs(at - row) <= window:
        return False
    same = at if at < len(p) and int(p.tkey[at]) == -1 else at - 1  # END: the thread's last row
    return int(p.tid[same]) == int(p.tid[row]) and int(p.tkey[same]) == int(p.tkey[row]) == -1


def _silent_before_reported(p: Prepared, bs: align.Streams, regions: align.Regions, named: np.ndarray,
                            weights: tuple[np.ndarray, np.ndarray], message_row: int, timing_codes: np.ndarray,
                            noise: frozenset[int]) -> None:
    """Rename, in place, a region named by an error its thread passed over in silence when the
    run's last message (a run exiting with another status) reports a later error of the same
    region, as severe, at another path: the message says which failure stopped the program.
    zstd --rm of another account's log in a sticky spool: copying the log's owner to the .zst
    fails chown EPERM twice, ignored (chmod and the rest go on as in the good runs), then the
    unlink of the log fails EPERM and is what zstd reports -- the first error in the region was
    no more the cause than the second. The earlier error keeps the name when the thread wrote
    anything between the two (it was reported too: tar's "Cannot mkdir" before the next
    member's error) or when the later error's path is the earlier's or under it (a directory
    that could not be made, then a file in it: the earlier one is the cause)."""
    weight, max_weight = weights
    q = _error_before(p, message_row, timing_codes, noise)
    if q < 0:
        return
    at = np.flatnonzero(bs.orig == q)
    if not len(at):
        return
    pos = int(at[0])
    r = np.flatnonzero((regions.start <= pos) & (regions.end >= pos))
    if not len(r):
        return
    r = int(r[0])
    first = int(named[r])
    row = int(bs.orig[first])
    if (pos <= first or row < 0 or max_weight[r] <= 0 or weight[pos] != max_weight[r] or weight[first] != max_weight[r]
            or int(p.tid[row]) != int(p.tid[q]) or int(p.tkey[row]) != int(p.tkey[q]) or p.errno[row] < 0):
        return
    if p.plainpath[row] < 0 or p.plainpath[q] < 0:
        return
    earlier, later = p.path_string(int(p.plainpath[row])), p.path_string(int(p.plainpath[q]))
    if not earlier or not later or later == earlier or later.startswith(earlier.rstrip("/") + "/"):
        return
    if "output" in p.table.column_names and p.order is not None and q - row > 1:
        between = numpy_of(p.table.column("output").is_valid())[np.asarray(p.order[row + 1 : q])]
        same = (np.asarray(p.tid[row + 1 : q]) == int(p.tid[q]))
        if bool((between & same).any()):
            return
    named[r] = pos


def _reported_error(p: Prepared, bs: align.Streams, pos: int, timing_codes: np.ndarray, noise: frozenset[int]) -> int:
    """The bad row of the error a message catalog lookup at bad position `pos` reports: the
    thread's call right before the lookup (noise calls aside), when it failed with an errno
    that is not timing; -1 otherwise. The message's own first writes (error()'s "prog: "
    prefix goes out before strerror's text is translated) are passed over too."""
    return _error_before(p, int(bs.orig[pos]), timing_codes, noise)


def _allowlisted_cause(p: Prepared, bs: align.Streams, pos: int, message_row: int,
                       sites: tuple[np.ndarray, np.ndarray], timing_codes: np.ndarray, noise: frozenset[int],
                       k: int) -> int:
    """The bad row of the error the run's last message (`message_row`, near bad position `pos`
    in its thread) reports -- or, when the region is named by its thread's exit with no message
    near, the error right before that exit -- when that error is no call the good runs made -- its (call,
    path) is at no call site of theirs, or, for a call without a path, no good process of its
    name failed that call with that errno as often (`_new_pathless_errors`), so only a broad allowlist entry set it aside (a
    sysfs glob; prctl EINVAL, libcap's probe) -- else -1. A miss the good runs make too (a
    learned entry, a probe they survive) is not the cause: they went on after it -- unless the
    bad run made it more often than each of them (`_failed_more_often`).
    `sites`: the good runs' call sites (`good_calls`), the new pathless errors (a row mask)."""
    good_calls, new_pathless = sites
    row = int(bs.orig[pos])
    if message_row >= 0 and (row == message_row or _near(p, message_row, bs, pos, 4 * k)):
        anchor = message_row
    elif row >= 0 and p.probe_values[int(p.probe[row])] in ("exit_group", "exit"):
        anchor = row  # no message: the exit itself (a launcher's `[ -r $f ] || exit 3`)
    else:
        return -1
    q = _error_before(p, anchor, timing_codes, noise)
    if q < 0:
        return -1
    if p.plainpath[q] < 0:
        return q if new_pathless[q] else -1
    if not bool(isin(_call_keys(p, q), good_calls)):
        return q
    return q if _failed_more_often(p, q) else -1


def _failed_more_often(p: Prepared, q: int) -> bool:
    """Whether the bad run's failure at bad row `q` is one its call site turned from a success:
    the bad run failed that (call, path, errno) more often than every good run did and
    succeeded at that (call, path) fewer times than every good run did. A call site is keyed by
    path, not by what else the call names: an optional tag missing on a file in every run and
    the required one missing on the same file in the bad run are two getxattr ENODATA of one
    site (the attribute's name is not in the trace), where each good run has one miss and then
    reads the required tag. A call only asked more often (bash's isatty probe of /dev/null,
    ENOTTY in every run, once more to print a message) is no such turn. A site no good run ever
    failed so is one too, however its successes count: a site whose successes cannot be told
    apart shares its path with other objects (every pipe is `pipe:`), and a non-blocking write's
    EAGAIN before the job's "write stdout: Resource temporarily unavailable" meets a site the
    good runs wrote to as often, on their other pipes (real_fortyseventh's
    `nonblocking_record_over_pipe`, which the curated entry for pipe EAGAIN set aside)."""
    nb = _bad_row_count(p)
    site = (p.probe == p.probe[q]) & (p.plainpath == p.plainpath[q])
    failed, ok = site & (p.errno == p.errno[q]), site & (p.errno < 0)
    good_failed = _per_good_counts(p, _good_rows_where(failed[nb:], nb))
    if not good_failed.any():
        return True
    if int(np.count_nonzero(ok[:nb])) >= int(_per_good_counts(p, _good_rows_where(ok[nb:], nb)).min()):
        return False
    return int(np.count_nonzero(failed[:nb])) > int(good_failed.max())


def _per_good_counts(p: Prepared, rows: np.ndarray) -> np.ndarray:
    """How many of `rows` (good rows) each good trace has, 0 for a trace with none."""
    tkey = p.tkey
    n_good = int(np.max(tkey.values if isinstance(tkey, PerStream) else np.asarray(tkey))) + 1
    if not len(rows):
        return np.zeros(max(n_good, 1), dtype=np.int64)
    return np.bincount(np.asarray(p.tkey[rows]).astype(np.int64), minlength=max(n_good, 1))


def _new_pathless_errors(p: Prepared, nb: int, err_any: np.ndarray) -> np.ndarray:
    """Row mask: bad errors of calls without a path whose (call, errno, process name) the bad
    run has more often than every good run -- none of them has it at all, or each met it
    fewer times and went on (`err_any`: the rows with an error). A call without a path has no
    call site to tell the routine failures from the new one: three optional interfaces
    missing in every run (SIOCGIFINDEX ENODEV) and the required one missing in the bad run
    are four of one (ioctl, ENODEV); SO_RCVBUFFORCE refused to nobody before its fallback and
    then SO_PRIORITY 7 refused are two of one (setsockopt, EPERM). The count says one failure
    is new."""
    out = np.zeros(len(p), dtype=bool)
    rows = err_any[p.plainpath[err_any] < 0]
    if not len(rows):
        return out
    comm = np.asarray(p.ncomm[rows]).astype(np.int64) + 1
    key = ((p.probe[rows].astype(np.int64) * np.int64(len(p.errno_values) + 1) + p.errno[rows])
           * np.int64(len(p.ncomm_values) + 2) + comm)
    bad = rows < nb
    bad_keys, bad_counts = np.unique(key[bad], return_counts=True)
    if not len(bad_keys):
        return out
    # the most times one good run has each of the bad run's keys (0: none has it)
    good_max = np.zeros(len(bad_keys), dtype=np.int64)
    good = ~bad & isin(key, bad_keys)
    if good.any():
        pairs, counts = np.unique(np.stack([np.asarray(p.tkey[rows[good]]).astype(np.int64), key[good]]),
                                  axis=1, return_counts=True)
        at = np.searchsorted(bad_keys, pairs[1])
        np.maximum.at(good_max, at, counts)
    more = bad_keys[bad_counts > good_max]
    out[rows[bad]] = isin(key[bad], more)
    return out


def _quoted_error(p: Prepared, row: int, nb: int, noise: frozenset[int]) -> int:
    """The bad row of the call that failed right before bad row `row` in its thread when `row`
    is a message write whose text holds that error's description (strerror: "Resource
    temporarily unavailable" for EAGAIN, what perror and err(3) print); -1 otherwise."""
    if not 0 <= row < nb or p.order is None or "output" not in p.table.column_names \
            or p.probe_values[int(p.probe[row])] not in MESSAGE_WRITES:
        return -1
    text = p.table.column("output")[int(p.order[row])].as_py()
    if not text:
        return -1
    q = _error_before(p, row, np.zeros(0, dtype=np.int32), noise)
    if q < 0:
        return -1
    number = getattr(errno_names, p.errno_values[int(p.errno[q])], None)
    return q if isinstance(number, int) and os.strerror(number) in text else -1


def _error_before(p: Prepared, row: int, timing_codes: np.ndarray, noise: frozenset[int]) -> int:
    """The bad row of the thread's call right before bad row `row`, noise calls, message
    writes and a failed call's clean-up (`DESCRIPTOR_RELEASES`) passed over, when it failed with an errno that is not timing (and is no message
    catalog lookup); -1 otherwise."""
    if row <= 0:
        return -1

    def same_thread(q: int) -> bool:
        return q >= 0 and int(p.tkey[q]) == int(p.tkey[row]) and int(p.tid[q]) == int(p.tid[row])

    passed = set(codes_where(p.probe_values, MESSAGE_WRITES | DESCRIPTOR_RELEASES).tolist())
    q = row - 1
    while same_thread(q) and (int(p.probe[q]) in noise or (int(p.probe[q]) in passed and p.errno[q] < 0)):
        q -= 1
    if not same_thread(q) or p.errno[q] < 0 or int(p.errno[q]) in timing_codes:
        return -1
    path = p.path_string(int(p.plainpath[q])) if p.plainpath[q] >= 0 else None
    return -1 if path and MESSAGE_CATALOG.search(path) else q


def _exit_anomaly(p: Prepared, rows: _Rows, nb: int, message_row: int, context: int,
                  noise: frozenset[int]) -> dict[str, Any]:
    """The anomaly of a bad run whose calls all look like the good runs' but which exits with
    a status none of them had: named by what it wrote last (`message_row`), else by its last
    event."""
    row = message_row if message_row >= 0 else int(np.argmax(p.seq[:nb]))
    ev = rows.event(row)
    before = []
    q = row - 1
    while q >= 0 and len(before) < context and int(p.tid[q]) == ev["tid"]:
        if int(p.probe[q]) not in noise:
            before.append(_strip(rows.event(q)))
        q -= 1
    return {
        "rank": 1, "score": SEVERITY[0] + NOT_RECOVERED_BONUS, "kind": "divergence",
        "probe": ev["probe"], "errno": ev["errno"], "path": ev["path"], "npath": ev["npath"],
        "path2": ev["path2"], "then_wrote": rows.output_after(nb, ev["seq"], ev["pid"]), "next_event": None,
        "process": {"pid": ev["pid"], "tid": ev["tid"], "comm": ev["comm"], "role": ev["comm"] or ""},
        "position": ev["seq"], "recovered": False, "unexplained_events": 0,
        "last_common": before[::-1], "good_instead": [],
    }


def _blames_target(p: Prepared, row: int, nb: int, probe: str, errno: str | None) -> bool:
    """Whether the error of a two-path call (rename/link: source, target) is the target's:
    errors about the destination are (but not a RENAME_NOREPLACE rename's EPERM); a lookup
    error (ENOENT, ENOTDIR, ...) is unless the bad run showed the source failing the same way
    before."""
    if probe not in TWO_PATH_PROBES or errno not in TARGET_ERRNOS or row < 0:
        return False
    if errno in SOURCE_ERRNOS.get(probe, ()):
        return False
    if errno in ("ENOENT", "ENOTDIR", "ELOOP", "ENAMETOOLONG"):
        same = (p.plainpath[:nb] == p.plainpath[row]) & (p.errno[:nb] == p.errno[row]) & (p.seq[:nb] < p.seq[row])
        return not bool(same.any())
    return not (errno == "EPERM" and _no_replace_rename(p, row))


def _no_replace_rename(p: Prepared, row: int) -> bool:
    """Whether `row` is a rename asked with RENAME_NOREPLACE (mv's first try, renameat2 -n):
    its target did not exist (it would have failed EEXIST), so an EPERM is not the target's
    inode (immutable, append-only, another's in a sticky directory) but the source's -- the
    file a log rotation moves after chattr +i/+a, or another user's in a sticky directory."""
    if "arg" not in p.table.column_names:  # (the per-row narg is released before the report)
        return False
    flags = p.value("arg", row)
    return isinstance(flags, str) and "RENAME_NOREPLACE" in flags


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


def _bad_row_count(p: Prepared) -> int:
    """Rows of the bad trace (trace key -1): prepare_both puts them first, rows 0..nb-1.
    Counted per stream when the trace key is stored so (no per-row array)."""
    tkey = p.tkey
    if isinstance(tkey, PerStream):
        lengths = np.diff(np.r_[tkey.starts, len(p)])
        return int(lengths[tkey.values < 0].sum())
    return int(np.count_nonzero(np.asarray(tkey) < 0))


def _good_rows_where(mask: np.ndarray, nb: int) -> np.ndarray:
    """Row numbers of the good rows (rows nb..) where `mask`, a bool per good row, holds:
    the tests run on the good rows' slice instead of every row and a trace-key mask."""
    found = np.flatnonzero(mask)
    found += nb
    return found


def _enotty_known_there(p: Prepared, row: int, good_outcomes: np.ndarray, n_errnos: np.int64) -> bool:
    """`row` fails ENOTTY at a call site where the good runs failed ENOTTY too: the descriptor
    is no terminal in their runs as well, so ENOTTY says nothing new about it, however many
    other ioctls succeeded there (python's open() of a script asks isatty -- TCGETS, ENOTTY --
    besides FIOCLEX's success; a traceback reopening the script repeats the question). The
    ENOTTY exclusion from the covered timing errnos is for a node the good runs' ioctl answered
    and never refused so."""
    if p.errno_values[p.errno[row]] != "ENOTTY":
        return False
    return bool(isin(_call_keys(p, row) * n_errnos + (p.errno[row] + 1), good_outcomes).any())


def _call_keys(p: Prepared, rows: np.ndarray | int) -> np.ndarray:
    """int64 key of (probe, plain normalised path) of `rows`: a call site across runs."""
    return p.probe[rows].astype(np.int64) * np.int64(len(p.npath_values) + 1) + (p.plainpath[rows] + 1)


def _seq_of(s: align.Streams, pos: np.ndarray, seq_rows: np.ndarray) -> np.ndarray:
    """seq of the source row of each position; END tokens take the seq of the row before."""
    pos = np.asarray(pos)
    orig = s.orig[pos]
    prev = s.orig[np.maximum(pos - 1, 0)]
    row = np.where(orig >= 0, orig, prev)
    return np.where(row >= 0, seq_rows[np.maximum(row, 0)], -1)


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


def _strip(e: dict[str, Any]) -> dict[str, Any]:
    return {k: e[k] for k in ("seq", "probe", "errno", "path", "path2", "pid", "tid", "comm", "trace_id", "output")}


def write_report(report: DiffReport, as_json: bool, out: Any = None) -> None:
    from tracer.schema import dumps_json

    out = out or sys.stdout
    if as_json:
        out.write(dumps_json(report.to_dict()) + "\n")
    else:
        out.write(report.render_text() + "\n")


def default_allowlist_path() -> Path | None:
    from baseline.run.allowlist import DEFAULT_PATH

    return DEFAULT_PATH if DEFAULT_PATH.exists() else None
