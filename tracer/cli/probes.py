"""`tracer probes check`: whether each probe of a set exists here and can attach."""

from __future__ import annotations

import argparse
import json
import sys

from tracer.cli.common import HelpFormatter

EPILOG = """\
examples:
  tracer probes check                  # every set under bpf/probes/
  tracer probes check rdma             # BTF/kallsyms lookup, vendor gate, lockdown
  tracer probes check verbs-user --json
  tracer probes check syscalls --attach   # also load the program and attach for real (root)

exit status: 0 when every probe of the checked sets exists (and attaches, with --attach), 1 when
some do not, 2 on bad input.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    probes = subparsers.add_parser("probes", help="inspect probe sets", formatter_class=HelpFormatter,
                                   description="Inspect the fleet tracer's probe sets.", epilog=EPILOG)
    sub = probes.add_subparsers(dest="probes_command", metavar="ACTION")
    sub.required = True
    p = sub.add_parser("check", help="check a probe set against this host", description=__doc__.split(": ", 1)[1],
                       formatter_class=HelpFormatter, epilog=EPILOG)
    p.add_argument("sets", nargs="*", metavar="SET", help="probe set names or YAML paths (default: all shipped sets)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--attach", action="store_true", help="compile and attach for real to test attachability (root)")
    p.add_argument("--vendor", choices=["mlx5", "bnxt_re", "irdma"], help="apply the namespace gate for this driver")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from tracer.fleet.probes import PROBES_DIR, check_probe_set, load_probe_set

    names = args.sets or sorted(p.stem for p in PROBES_DIR.glob("*.yaml"))
    if args.attach:
        from tracer.privilege import check_bpf_environment

        note = check_bpf_environment("tracer probes check --attach")
        if note:
            print(f"tracer: {note}", file=sys.stderr)
    report = []
    all_ok = True
    for name in names:
        pset = load_probe_set(name, vendor=args.vendor or "detect")
        statuses = check_probe_set(pset)
        if args.attach:
            _try_attach(pset, statuses)
        ok = all(s.exists and s.attachable is not False for s in statuses)
        all_ok &= ok
        report.append({"set": pset.name, "attach": pset.attach, "source": pset.source, "vendor": pset.vendor,
                       "library": pset.library,
                       "gated": any(p.vendors for p in pset.probes), "probes": [s.as_dict() for s in statuses]})
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        for entry in report:
            gate = ""
            if entry["gated"]:
                gate = f", vendor gate: {entry['vendor'] or 'no RDMA driver found, mlx5 names'}"
            present = sum(p["exists"] for p in entry["probes"])
            print(f"{entry['set']} ({entry['attach']}{gate}): {present}/{len(entry['probes'])} probes present")
            for s in entry["probes"]:
                mark = "ok " if s["exists"] and s["attachable"] is not False else "-- "
                name = s["probe"] if s["probe"] == s["default_symbol"] else f"{s['probe']} (gate: {s['default_symbol']})"
                where = s["where"] or "absent"
                attach = {True: ", attaches", False: ", cannot attach", None: ""}[s["attachable"]]
                reason = f": {s['reason']}" if s["reason"] else ""
                print(f"  {mark}{name:<44} {s['layer']:<9} {where}{attach}{reason}")
    return 0 if all_ok else 1


def _try_attach(pset, statuses) -> None:
    from tracer.errors import TracebaseError
    from tracer.fleet.program import FleetProgram

    prog = FleetProgram(pset)
    try:
        results = {r.probe: r for r in prog.attach(best_effort=True)}
    except TracebaseError as exc:
        results = {}
        for s in statuses:
            s.attachable, s.reason = False, str(exc)
    finally:
        prog.close()
    for s in statuses:
        r = results.get(s.probe)
        if r is not None:
            s.attachable = r.live
            if not r.live and r.reason:
                s.reason = r.reason
