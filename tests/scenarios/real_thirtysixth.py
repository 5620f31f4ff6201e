"""A thirty-sixth set of real programs with one real fault each: **in-place editors and config
rendering** -- what a deploy step does to config files: ``sed -i``, ``perl -pi``, a Python
render through a temp file and ``os.replace``, ``envsubst`` and ``m4`` templates, ``install
-m``, ``mv -b``, ``ln -sfn`` switching a ``current`` link, ``tee`` into a file, ``patch``,
``chown -R`` after rendering and ``csplit`` cutting a config into fragments. The fault is one
the editor meets on the file, its directory or the mount it lives on:

- **the editor's temp file or rename**: ``sed -i`` renaming its temp file over a config a
  hardening step made immutable (``chattr +i``: rename EPERM), ``sed -i --follow-symlinks`` of
  a config linked into a shared directory bind-mounted read-only (its temp file there: EROFS),
  ``perl -pi`` of a config on a read-only bind mount (its temp file: EROFS), a Python render's
  ``os.replace`` onto a config path that a container run made a directory (``docker run -v``
  of a missing file: rename EISDIR);
- **the editor's backup**: ``mv -b`` whose backup name ``app.conf~`` a snapshot tool took with
  a directory (rename EISDIR);
- **the target's owner or attributes**: ``install -m 0640`` as the service user into a config
  directory a root rerun recreated (unlink EACCES), ``patch`` of a config made immutable
  (patch's access check: faccessat2 EPERM);
- **the template or the place to render into**: ``m4`` including a fragment the template
  package dropped (open ENOENT, after the routine miss in the cwd), ``csplit`` cutting a config
  into ``conf.d`` fragments after a clean-up removed ``conf.d`` (open ENOENT), ``tee`` writing
  through a config link into a shared directory a clean-up removed (open ENOENT), ``chown -R``
  of ``current/`` after ``ln -sfn`` switched it onto a release the upload never finished
  (stat ENOENT), ``envsubst`` rendering onto a config tmpfs a runaway log filled (write ENOSPC).

Faults (``t36_`` cases): sed's rename EPERM, sed's openat EROFS, perl's openat EROFS, python3's
rename EISDIR, mv's renameat EISDIR, install's unlinkat EACCES, patch's faccessat2 EPERM, m4's
openat ENOENT, csplit's openat ENOENT, tee's openat ENOENT, chown's newfstatat ENOENT,
envsubst's write ENOSPC.

Good runs vary naturally: random config contents and values, random release ids, random temp
names of the editors (sed's ``sedXXXXXX``, perl's, mkstemp's), pids. Noise cases
(``QUIET_THIRTYSIXTH``) are good runs alone: sed -i over randomly named configs, perl -pi.bak
over a stale backup, cp --backup=numbered over a random number of earlier backups, a Python
render of random files through mkstemp and os.replace, install -D then ln -sfn onto a random
release, m4 | envsubst | tee of random values, csplit into a random number of fragments then
chmod -R and chown -R, patch -b with a timestamp in the backup's name.
"""

from __future__ import annotations

import difflib
import os
import random
import subprocess
from pathlib import Path

from .catalog import fill_up, umount
from .files import mounted_tmpfs, shell_argv, token, write_file
from .harness import PY, ROOT, NoAnomalyCase, Scenario

OPEN = frozenset({"openat", "open", "openat2", "creat"})
# a rename's expected path is its target: the file the errno is about (immutable, a directory)
RENAME = frozenset({"rename", "renameat", "renameat2"})
STAT = frozenset({"newfstatat", "statx", "stat", "lstat"})
ACCESS = frozenset({"access", "faccessat", "faccessat2"})
WRITE = frozenset({"write", "writev", "pwrite64"})
NOBODY_UID = 65534


def _dirs(base: Path, *names: str) -> None:
    for n in names:
        (base / n).mkdir(parents=True, exist_ok=True)


def _config(path: Path, mode: int = 0o644) -> Path:
    """An application config with random values (a previous deploy's render)."""
    lines = [f"# rendered by deploy {token(4)}", "[server]", f"listen = 127.0.0.1:{random.randrange(1024, 65000)}",
             f"workers = {random.randrange(1, 33)}", f"release = {token(5)}", "[storage]",
             f"path = /srv/data/{token(3)}", f"quota_mb = {random.randrange(100, 10000)}"]
    lines += [f"opt_{token(2)} = {token(4)}" for _ in range(random.randrange(2, 12))]
    return write_file(path, "\n".join(lines) + "\n", mode)


def _bind(src: Path, target: Path, ro: bool) -> None:
    """Bind-mount `src` at `target`, read-only if `ro` (how a container gets its config)."""
    src.mkdir(parents=True, exist_ok=True)
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", str(src), str(target)], check=True, capture_output=True)
    if ro:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(target)], check=True, capture_output=True)


def _immutable(path: Path, on: bool) -> None:
    subprocess.run(["chattr", "+i" if on else "-i", str(path)], check=on, capture_output=True)


def _umounting(*names: str):
    def teardown(base: Path) -> None:
        for n in names:
            umount(base / n)
    return teardown


def _mutable_again(*names: str):
    def teardown(base: Path) -> None:
        for n in names:
            if (base / n).exists():
                _immutable(base / n, False)
    return teardown


# --- sed -i: a config a hardening step made immutable --------------------------------------------
def _sed_immutable_argv(b: Path) -> list[str]:
    return ["sed", "-i", "-e", "s/^workers = .*/workers = 16/", "-e", "s/^release = .*/release = next/",
            f"{b}/etc/app/app.conf"]


def sed_inplace_immutable(base: Path, bad: bool) -> None:
    conf = _config(base / "etc" / "app" / "app.conf")
    if bad:  # a CIS hardening role ran `chattr +i` on the service's config
        _immutable(conf, True)


# --- sed -i --follow-symlinks: the link's target dir is a read-only bind mount -------------------------
def _sed_follow_argv(b: Path) -> list[str]:
    return ["sed", "-i", "--follow-symlinks", "-e", "s/^listen = .*/listen = 0.0.0.0:8080/", f"{b}/etc/app/app.conf"]


def sed_follow_symlinks_ro_target(base: Path, bad: bool) -> None:
    _config(base / "srv" / "config.src" / "app.conf")
    # the shared config directory is bind-mounted into place; the bad host's fstab has it ro
    _bind(base / "srv" / "config.src", base / "srv" / "config", ro=bad)
    _dirs(base, "etc/app")
    os.symlink(f"{base}/srv/config/app.conf", base / "etc" / "app" / "app.conf")


# --- perl -pi: a config on a read-only bind mount ----------------------------------------------------------
def _perl_argv(b: Path) -> list[str]:
    return ["perl", "-pi", "-e", r"s/^workers = \d+/workers = 8/", f"{b}/etc/app/app.conf"]


def perl_pi_ro_bind(base: Path, bad: bool) -> None:
    _config(base / "volumes" / "app-config" / "app.conf")
    # the config volume is bind-mounted at etc/app: the bad run's compose file says `:ro`
    _bind(base / "volumes" / "app-config", base / "etc" / "app", ro=bad)


# --- python3 -S: a render through a temp file and os.replace onto a directory --------------------------
RENDER_PY = """import os, sys, tempfile
base = sys.argv[1]
values = dict(line.strip().split("=", 1) for line in open(f"{base}/values.env") if "=" in line)
text = open(f"{base}/templates/app.conf.tmpl").read().format(**values)
fd, tmp = tempfile.mkstemp(dir=f"{base}/etc/app", prefix=".app.conf.")
with os.fdopen(fd, "w") as fh:
    fh.write(text)
    fh.flush()
    os.fsync(fh.fileno())
os.chmod(tmp, 0o644)
os.replace(tmp, f"{base}/etc/app/app.conf")
"""

TEMPLATE = "[server]\nlisten = {host}:{port}\nworkers = {workers}\nrelease = {release}\n"


def _values(base: Path) -> None:
    write_file(base / "values.env", f"host=127.0.0.{random.randrange(1, 255)}\nport={random.randrange(1024, 65000)}\n"
                                f"workers={random.randrange(1, 33)}\nrelease={token(5)}\n")
    write_file(base / "templates" / "app.conf.tmpl", TEMPLATE)


def _python_argv(b: Path) -> list[str]:
    return [*PY, "-c", RENDER_PY, str(b)]


def python_replace_target_is_dir(base: Path, bad: bool) -> None:
    _values(base)
    if bad:  # `docker run -v $PWD/etc/app/app.conf:...` before the first render made it a directory
        _dirs(base, "etc/app/app.conf")
    else:
        _config(base / "etc" / "app" / "app.conf")


# --- mv -b: the backup name taken by a directory --------------------------------------------------------------
def _mv_argv(b: Path) -> list[str]:
    return ["mv", "-b", f"{b}/stage/app.conf", f"{b}/etc/app/app.conf"]


def mv_backup_name_is_dir(base: Path, bad: bool) -> None:
    _config(base / "stage" / "app.conf")
    _config(base / "etc" / "app" / "app.conf")
    if bad:  # a snapshot tool saved the previous config as a directory named like mv's backup
        _config(base / "etc" / "app" / "app.conf~" / "app.conf")
    else:  # the previous deploy's backup
        _config(base / "etc" / "app" / "app.conf~")


# --- install -m 0640 (as the service user): a config directory a root rerun recreated ----------------------
def _install_argv(b: Path) -> list[str]:
    return ["install", "-m", "0640", f"{b}/stage/app.conf", f"{b}/etc/app/app.conf"]


def install_dir_root_recreated(base: Path, bad: bool) -> None:
    _config(base / "stage" / "app.conf")
    conf = _config(base / "etc" / "app" / "app.conf", 0o640)
    if not bad:  # the bad run's etc/app and config were recreated by a root rerun (root's, 0755)
        os.chown(base / "etc" / "app", NOBODY_UID, NOBODY_UID)
        os.chown(conf, NOBODY_UID, NOBODY_UID)


# --- patch: a config made immutable ----------------------------------------------------------------------------
def _patch_argv(b: Path) -> list[str]:
    return ["patch", "-p1", "-d", f"{b}/etc/app", "-i", f"{b}/stage/tuning.patch"]


def patch_immutable_target(base: Path, bad: bool) -> None:
    conf = _config(base / "etc" / "app" / "app.conf")
    old = conf.read_text().splitlines(keepends=True)
    new = [("workers = 64\n" if line.startswith("workers = ") else line) for line in old]
    write_file(base / "stage" / "tuning.patch", "".join(difflib.unified_diff(old, new, "a/app.conf", "b/app.conf")))
    if bad:
        _immutable(conf, True)


# --- m4 -I: a fragment the template package dropped ---------------------------------------------------------
SITE_M4 = "server_name `{name}'\ninclude(`fragments/tls.m4')dnl\nworkers {workers}\n"


def _m4_argv(b: Path) -> list[str]:
    return ["m4", "-I", f"{b}/templates", f"{b}/site/app.conf.m4"]


def m4_include_fragment_missing(base: Path, bad: bool) -> None:
    write_file(base / "site" / "app.conf.m4", SITE_M4.format(name=f"{token(3)}.example", workers=random.randrange(1, 9)))
    write_file(base / "templates" / "fragments" / "logging.m4", f"log_level `{random.choice(['info', 'debug'])}'\n")
    if not bad:  # the bad run's template package (v2) dropped tls.m4 it still includes
        write_file(base / "templates" / "fragments" / "tls.m4", f"ssl_certificate /etc/ssl/{token(3)}.pem\n")


# --- csplit: conf.d removed by a clean-up before the split ---------------------------------------------------------
def _csplit_argv(b: Path) -> list[str]:
    return ["csplit", "-s", "-z", "-f", f"{b}/etc/app/conf.d/part-", f"{b}/stage/app.conf", "/^\\[/", "{*}"]


def csplit_fragments_dir_missing(base: Path, bad: bool) -> None:
    _config(base / "stage" / "app.conf")
    _dirs(base, "etc/app")
    if not bad:  # the bad run's clean-up step ran `rm -rf conf.d` and nothing made it again
        _dirs(base, "etc/app/conf.d")


# --- tee: a config link into a shared directory a clean-up removed --------------------------------------------
TEE_SH = 'sort -u "$1/stage/hosts" | tee "$1/etc/app/hosts.conf"'


def tee_link_into_removed_dir(base: Path, bad: bool) -> None:
    write_file(base / "stage" / "hosts", "".join(f"10.0.{random.randrange(256)}.{random.randrange(256)} node-{token(2)}\n"
                                             for _ in range(random.randrange(5, 40))))
    _dirs(base, "etc/app")
    os.symlink(f"{base}/shared/config/hosts.conf", base / "etc" / "app" / "hosts.conf")
    if not bad:  # the bad host's `tmpreaper` removed the shared config directory
        write_file(base / "shared" / "config" / "hosts.conf", "# empty\n")


# --- chown -R current/: ln -sfn switched onto a release the upload never finished ----------------------------
def _chown_argv(b: Path) -> list[str]:
    return ["chown", "-R", f"{NOBODY_UID}:{NOBODY_UID}", f"{b}/app/current/"]


def chown_current_missing_release(base: Path, bad: bool) -> None:
    old = f"rel-{token(4)}"
    for n in range(random.randrange(2, 6)):
        _config(base / "app" / "releases" / old / "conf" / f"part-{n}.conf")
    new = f"rel-{token(4)}"
    if not bad:  # the bad run's upload of the new release failed; the link was switched anyway
        for n in range(random.randrange(2, 6)):
            _config(base / "app" / "releases" / new / "conf" / f"part-{n}.conf")
    os.symlink(f"releases/{new}", base / "app" / "current")


# --- envsubst: rendering onto a config tmpfs a runaway log filled ------------------------------------------------
ENVSUBST_SH = 'set -a && . "$1/values.env" && exec envsubst < "$1/templates/app.conf.tmpl" > "$1/etc/app/app.conf"'
ENV_TEMPLATE = "[server]\nlisten = ${host}:${port}\nworkers = ${workers}\nrelease = ${release}\n" + \
               "".join(f"# {'-' * 60} {i}\n" for i in range(20))


def envsubst_render_disk_full(base: Path, bad: bool) -> None:
    write_file(base / "values.env", f"host=127.0.0.{random.randrange(1, 255)}\nport={random.randrange(1024, 65000)}\n"
                                f"workers={random.randrange(1, 33)}\nrelease={token(5)}\n")
    write_file(base / "templates" / "app.conf.tmpl", ENV_TEMPLATE)
    etc = mounted_tmpfs(base / "etc" / "app", "256k")
    write_file(etc / "debug.log", os.urandom(random.randrange(4, 64) * 1024))
    if bad:  # the service's debug log, left on, filled the config tmpfs
        fill_up(etc)


REAL_THIRTYSIXTH: list[Scenario] = [
    Scenario("t36_sed_inplace_immutable", "sed -i (a config made immutable)", _sed_immutable_argv,
             sed_inplace_immutable, RENAME, "EPERM", lambda b: f"{b}/etc/app/app.conf",
             teardown=_mutable_again("etc/app/app.conf"),
             description="sed -i renaming its temp file over a config a hardening role made immutable "
                         "(chattr +i: rename EPERM)"),
    Scenario("t36_sed_follow_symlinks_ro_target", "sed -i --follow-symlinks (a linked config)", _sed_follow_argv,
             sed_follow_symlinks_ro_target, OPEN, "EROFS", lambda b: f"{b}/srv/config/sed*",
             teardown=_umounting("srv/config"),
             description="sed -i --follow-symlinks of a config linked into a shared directory bind-mounted "
                         "read-only: its temp file beside the target cannot be made (EROFS)"),
    Scenario("t36_perl_pi_ro_bind", "perl -pi (a config on a bind mount)", _perl_argv, perl_pi_ro_bind,
             OPEN, "EROFS", lambda b: f"{b}/etc/app/*", teardown=_umounting("etc/app"),
             description="perl -pi of a config whose volume a compose file bind-mounts :ro (temp file EROFS)"),
    Scenario("t36_python_replace_target_is_dir", "python3 -S (a render via mkstemp and os.replace)", _python_argv,
             python_replace_target_is_dir, RENAME, "EISDIR", lambda b: f"{b}/etc/app/app.conf",
             description="a Python render's os.replace of its temp file onto app.conf, which a docker run -v "
                         "of the missing file had made a directory (rename EISDIR)"),
    Scenario("t36_mv_backup_name_is_dir", "mv -b (the rendered config into place)", _mv_argv,
             mv_backup_name_is_dir, RENAME, "EISDIR", lambda b: f"{b}/etc/app/app.conf~",
             description="mv -b whose backup name app.conf~ a snapshot tool took with a directory "
                         "(renaming the old config to it: EISDIR)"),
    Scenario("t36_install_dir_root_recreated", "install -m 0640 (as the service user)", _install_argv,
             install_dir_root_recreated, frozenset({"unlinkat", "unlink"}), "EACCES",
             lambda b: f"{b}/etc/app/app.conf", unprivileged=True,
             description="install -m 0640 as the service user into a config directory a root rerun "
                         "recreated root's (removing the old config: unlink EACCES)"),
    Scenario("t36_patch_immutable_target", "patch -p1 (a tuning patch on a config)", _patch_argv,
             patch_immutable_target, ACCESS, "EPERM", lambda b: f"{b}/etc/app/app.conf",
             teardown=_mutable_again("etc/app/app.conf"),
             description="patch of a config made immutable: its write-access check fails EPERM (then "
                         "its rename of the patched temp file)"),
    Scenario("t36_m4_include_fragment_missing", "m4 -I (a site template)", _m4_argv,
             m4_include_fragment_missing, OPEN, "ENOENT", lambda b: f"{b}/templates/fragments/tls.m4",
             description="m4 including fragments/tls.m4, which the new template package dropped (after "
                         "the routine miss in the cwd, the -I directory's open ENOENT)"),
    Scenario("t36_csplit_fragments_dir_missing", "csplit (a config into conf.d fragments)", _csplit_argv,
             csplit_fragments_dir_missing, OPEN, "ENOENT", lambda b: f"{b}/etc/app/conf.d/part-*",
             description="csplit cutting a config into conf.d/part-NN after a clean-up removed conf.d"),
    Scenario("t36_tee_link_into_removed_dir", "tee (sorted hosts into a linked config)",
             lambda b: shell_argv(TEE_SH, str(b)), tee_link_into_removed_dir, OPEN, "ENOENT",
             lambda b: f"{b}/etc/app/hosts.conf",
             description="tee writing through etc/app/hosts.conf, a link into a shared config directory a "
                         "tmpreaper removed (open ENOENT)"),
    Scenario("t36_chown_current_missing_release", "chown -R (current/ after a release switch)", _chown_argv,
             chown_current_missing_release, STAT, "ENOENT", lambda b: f"{b}/app/current*",
             description="chown -R of current/ after ln -sfn switched it onto a release whose upload "
                         "failed (stat ENOENT through the dangling link)"),
    Scenario("t36_envsubst_render_disk_full", "envsubst (a template onto a config tmpfs)",
             lambda b: shell_argv(ENVSUBST_SH, str(b)), envsubst_render_disk_full, WRITE, "ENOSPC",
             lambda b: f"{b}/etc/app/app.conf", teardown=_umounting("etc/app"),
             description="envsubst rendering onto a config tmpfs a debug log left on had filled "
                         "(write ENOSPC)"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
def _random_configs(d: Path, lo: int = 3, hi: int = 7) -> list[Path]:
    return sorted(_config(d / f"{token(3)}.conf") for _ in range(random.randrange(lo, hi)))


SED_NOISE_SH = 'exec sed -i -e "s/^workers = .*/workers = $(cat "$1/spec/workers")/" -e "/^opt_/d" "$1"/etc/app/*.conf'


def _sed_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _random_configs(base / "etc" / "app")
    write_file(base / "spec" / "workers", f"{random.randrange(1, 65)}\n")


def _perl_bak_argv(b: Path) -> list[str]:
    return ["perl", "-pi.bak", "-e", r"s/^quota_mb = \d+/quota_mb = 2048/", f"{b}/etc/app/app.conf"]


def _perl_bak_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _config(base / "etc" / "app" / "app.conf")
    _config(base / "etc" / "app" / "app.conf.bak")  # the previous edit's backup, always there


def _cp_numbered_argv(b: Path) -> list[str]:
    return ["cp", "--backup=numbered", f"{b}/stage/app.conf", f"{b}/etc/app/app.conf"]


def _cp_numbered_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _config(base / "stage" / "app.conf")
    _config(base / "etc" / "app" / "app.conf")
    for n in range(1, random.randrange(2, 7)):  # earlier deploys' backups, a random number of them
        _config(base / "etc" / "app" / f"app.conf.~{n}~")


RENDER_MANY_PY = """import os, sys, tempfile
base = sys.argv[1]
for name in sorted(os.listdir(f"{base}/values")):
    values = dict(line.strip().split("=", 1) for line in open(f"{base}/values/{name}") if "=" in line)
    text = open(f"{base}/templates/app.conf.tmpl").read().format(**values)
    fd, tmp = tempfile.mkstemp(dir=f"{base}/etc/app", prefix=f".{name}.")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, f"{base}/etc/app/{name}.conf")
"""


def _python_noise(base: Path, run: int) -> None:  # noqa: ARG001
    write_file(base / "templates" / "app.conf.tmpl", TEMPLATE)
    _dirs(base, "etc/app")
    for _ in range(random.randrange(2, 6)):
        write_file(base / "values" / f"svc-{token(3)}", f"host=10.0.0.{random.randrange(1, 255)}\n"
                                                     f"port={random.randrange(1024, 65000)}\n"
                                                     f"workers={random.randrange(1, 33)}\nrelease={token(5)}\n")


SWITCH_SH = ('read id < "$1/spec/release" && install -D -m 0644 "$1/stage/app.conf" "$1/app/releases/$id/app.conf" '
             '&& exec ln -sfn "releases/$id" "$1/app/current"')


def _switch_noise(base: Path, run: int) -> None:  # noqa: ARG001
    old = f"rel-{token(4)}"
    _config(base / "app" / "releases" / old / "app.conf")
    os.symlink(f"releases/{old}", base / "app" / "current")
    _config(base / "stage" / "app.conf")
    write_file(base / "spec" / "release", f"rel-{token(4)}\n")


PIPE_SH = ('set -a && . "$1/values.env" && m4 -I "$1/templates" "$1/site/app.conf.m4" | envsubst | '
           'tee "$1/etc/app/app.conf"')
PIPE_M4 = "server_name `${host}'\ninclude(`fragments/tls.m4')dnl\nlisten ${port}\nrelease ${release}\n"


def _pipe_noise(base: Path, run: int) -> None:  # noqa: ARG001
    write_file(base / "values.env", f"host={token(3)}.example\nport={random.randrange(1024, 65000)}\n"
                                f"release={token(5)}\n")
    write_file(base / "site" / "app.conf.m4", PIPE_M4)
    write_file(base / "templates" / "fragments" / "tls.m4", f"ssl_certificate /etc/ssl/{token(3)}.pem\n")
    _config(base / "etc" / "app" / "app.conf")


FRAGMENTS_SH = ('csplit -s -z -f "$1/etc/app/conf.d/part-" "$1/stage/app.conf" "/^\\[/" "{*}" && '
                'chmod -R go-w,o-r "$1/etc/app" && exec chown -R 65534:65534 "$1/etc/app"')


def _fragments_noise(base: Path, run: int) -> None:  # noqa: ARG001
    sections = [f"[{token(3)}]\n" + "".join(f"k{token(2)} = {token(4)}\n" for _ in range(random.randrange(1, 6)))
                for _ in range(random.randrange(2, 9))]
    write_file(base / "stage" / "app.conf", f"# {token(4)}\n" + "".join(sections))
    _dirs(base, "etc/app/conf.d")


PATCH_NOISE_SH = 'exec patch -s -b -z ".$(date +%s%N).orig" -p1 -d "$1/etc/app" -i "$1/stage/tuning.patch"'


def _patch_noise(base: Path, run: int) -> None:  # noqa: ARG001
    conf = _config(base / "etc" / "app" / "app.conf")
    old = conf.read_text().splitlines(keepends=True)
    new = [(f"quota_mb = {random.randrange(100, 10000)}\n" if line.startswith("quota_mb = ") else line)
           for line in old]
    write_file(base / "stage" / "tuning.patch", "".join(difflib.unified_diff(old, new, "a/app.conf", "b/app.conf")))


QUIET_THIRTYSIXTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t36_sed_inplace_random_configs", lambda b: shell_argv(SED_NOISE_SH, str(b)), _sed_noise,
                  description="sed -i over a random number of randomly named configs (sed's temp names random)"),
    NoAnomalyCase("t36_perl_pi_bak_stale_backup", _perl_bak_argv, _perl_bak_noise,
                  description="perl -pi.bak over a config whose previous backup is there (link EEXIST, then "
                              "rename over it, in every run)"),
    NoAnomalyCase("t36_cp_numbered_backups", _cp_numbered_argv, _cp_numbered_noise,
                  description="cp --backup=numbered over a random number (1..5) of earlier numbered backups"),
    NoAnomalyCase("t36_python_mkstemp_replace_many", lambda b: [*PY, "-c", RENDER_MANY_PY, str(b)], _python_noise,
                  description="a Python render of a random number of randomly named configs through mkstemp "
                              "and os.replace"),
    NoAnomalyCase("t36_install_then_ln_sfn_switch", lambda b: shell_argv(SWITCH_SH, str(b)), _switch_noise,
                  description="install -D into a random release, then ln -sfn switching current from a random "
                              "old release onto it"),
    NoAnomalyCase("t36_m4_envsubst_tee_render", lambda b: shell_argv(PIPE_SH, str(b)), _pipe_noise,
                  description="m4 | envsubst | tee of random values over the previous render"),
    NoAnomalyCase("t36_csplit_chmod_chown_fragments", lambda b: shell_argv(FRAGMENTS_SH, str(b)), _fragments_noise,
                  description="csplit into a random number of conf.d fragments, then chmod -R and chown -R"),
    NoAnomalyCase("t36_patch_backup_timestamped", lambda b: shell_argv(PATCH_NOISE_SH, str(b)), _patch_noise,
                  description="patch -b with the time in nanoseconds in the backup's suffix"),
]


def quiet_teardown() -> None:
    """Make mutable again and unmount what any failed case may have left."""
    for sc in REAL_THIRTYSIXTH:
        base = ROOT / sc.name
        for n in ("etc/app/app.conf",):
            if (base / n).exists():
                _immutable(base / n, False)
        for n in ("srv/config", "etc/app"):
            umount(base / n)


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
