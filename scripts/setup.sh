#!/usr/bin/env bash
# Installs everything tracebase needs on a Debian/Ubuntu machine, idempotently.
# - Python deps into .venv via uv (locked).
# - As root: bcc (python3-bpfcc, bpfcc-tools), bpftool, strace, jq, chromium (headless, for the
#   report rendering tests), kernel headers; when the running
#   kernel has no headers package, /lib/modules/$(uname -r)/build is pointed at the newest
#   Debian linux-headers-* tree (bcc only needs the UAPI/generic headers for our programs).
# - Makes Debian's bcc bindings importable from the venv without exposing all of dist-packages.
# Every action it takes is printed, prefixed with "setup:".
set -euo pipefail
cd "$(dirname "$0")/.."
# A minimal PATH (cron, `env -i`, PATH=/usr/bin:/bin) misses /usr/sbin's bpftool and /usr/local's
# tools: each run would install them again
export PATH="$PATH:/usr/local/bin:/usr/local/sbin:/usr/sbin:/sbin"
say() { echo "setup: $*" >&2; }
newest_headers() {
    for d in /usr/src/linux-headers-*-amd64 /usr/src/linux-headers-*-arm64; do
        if [ -d "$d/include" ]; then echo "$d"; fi
    done | sort -V | tail -1
}

# Another apt may hold the package locks for a while: apt-daily or unattended-upgrades on a
# machine's first boot, a second checkout's setup. dpkg's lock is waited for by apt itself
# (DPkg::Lock::Timeout); the package lists' lock of `apt-get update` is not, so that is retried.
APT_WAIT=900
apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$APT_WAIT" install -y -qq "$@" >/dev/null
}
lists_updated=0
apt_update_once() {
    [ "$lists_updated" = 0 ] || return 0
    local waited=0 out
    until out=$(apt-get -o DPkg::Lock::Timeout="$APT_WAIT" update -qq 2>&1); do
        if [[ $out != *"Could not get lock"* ]] || [ "$waited" -ge "$APT_WAIT" ]; then
            echo "$out" >&2
            return 1
        fi
        [ "$waited" -gt 0 ] || say "another apt holds the package lists (${out%%$'\n'*}); waiting up to ${APT_WAIT}s"
        sleep 5
        waited=$((waited + 5))
    done
    [ -z "$out" ] || echo "$out" >&2
    lists_updated=1
}

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    need=()
    dpkg -s python3-bpfcc >/dev/null 2>&1 || need+=(python3-bpfcc)
    dpkg -s bpfcc-tools >/dev/null 2>&1 || need+=(bpfcc-tools)
    command -v bpftool >/dev/null || need+=(bpftool)
    command -v strace >/dev/null || need+=(strace)
    command -v setpriv >/dev/null || need+=(util-linux)
    command -v jq >/dev/null || need+=(jq)  # the --json examples in --help pipe into jq
    build="/lib/modules/$(uname -r)/build"
    if [ ! -e "$build/include" ]; then
        if apt-cache show "linux-headers-$(uname -r)" >/dev/null 2>&1; then
            need+=("linux-headers-$(uname -r)")
        elif [ -z "$(newest_headers)" ]; then
            case "$(uname -m)" in aarch64) need+=(linux-headers-arm64) ;; *) need+=(linux-headers-amd64) ;; esac
        fi
    fi
    if [ ${#need[@]} -gt 0 ]; then
        say "installing Debian packages: ${need[*]}"
        apt_update_once
        apt_install "${need[@]}"
    fi
    # Programs the real-program tests run that a fresh machine of this kind lacks
    # (tests/scenarios/real_twentyfifth.py, real_twentysixth.py, real_thirtieth.py,
    # real_thirtyfirst.py; a few MB). Without them a set skips, saying so.
    tools=()
    for pkg in rsync cpio socat netcat-openbsd logrotate m4 pigz lzop dos2unix brotli zstd ninja-build zip; do
        dpkg -s "$pkg" >/dev/null 2>&1 || tools+=("$pkg")
    done
    if [ ${#tools[@]} -gt 0 ]; then
        say "installing Debian packages the real-program tests run: ${tools[*]}"
        apt_update_once
        apt_install --no-install-recommends "${tools[@]}"
        need+=("${tools[@]}")
    fi
    # Headless Chromium renders the HTML reports in the tests (screenshots, console errors);
    # ~110 MB, about 40 s here. Without it those tests skip with the reason.
    if ! command -v chromium >/dev/null; then
        say "installing Debian package: chromium (the report rendering tests use it headless)"
        apt_update_once
        apt_install --no-install-recommends chromium
    fi
    if [ ! -e "$build/include" ]; then
        hdr="$(newest_headers)"
        if [ -n "$hdr" ]; then
            mods="/lib/modules/$(uname -r)"
            mkdir -p "$mods"
            ln -sfn "$hdr" "$mods/build"
            # Debian splits headers into -<arch> (generated) and -common (the rest, e.g.
            # include/linux/kconfig.h); bcc looks in both build/ and source/.
            common="${hdr%-*}-common"
            [ -d "$common" ] && ln -sfn "$common" "$mods/source"
            say "kernel $(uname -r) has no headers package; linked $mods/build -> $hdr and source -> $common"
        else
            say "WARNING: no kernel headers found; bcc programs will not compile"
        fi
    fi
elif [ "$(id -u)" != 0 ]; then
    say "not root: skipping bcc/kernel-header install (tracing needs root; analysis works without)"
fi

# uv: on PATH, where its installers put it, or in a venv of its own under .tools/ (Debian's
# Python is externally managed: `pip install uv` into it is refused, PEP 668).
find_uv() {
    command -v uv && return
    local c home
    # HOME may be unset (env -i, some CI runners): the account's home from the passwd database
    home="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
    for c in "${home:-/nonexistent}/.local/bin/uv" "${home:-/nonexistent}/.cargo/bin/uv" /usr/local/bin/uv "$PWD/.tools/uv/bin/uv"; do
        if [ -x "$c" ]; then echo "$c"; return; fi
    done
    return 1
}
if ! UV="$(find_uv)"; then
    say "installing uv into .tools/uv (a venv of its own)"
    if ! python3 -m venv .tools/uv >/dev/null 2>&1; then
        rm -rf .tools/uv
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            say "installing Debian package: python3-venv (to make that venv)"
            apt_update_once
            apt_install python3-venv
        fi
        python3 -m venv .tools/uv
    fi
    .tools/uv/bin/python -m pip install -q --disable-pip-version-check uv
    UV="$PWD/.tools/uv/bin/uv"
fi
# Bytecode up front: tests and CLIs start many interpreters, and PYTHONDONTWRITEBYTECODE
# (set on some machines) would otherwise make each one recompile polars/sklearn/airflow.
"$UV" sync --frozen --quiet --compile-bytecode --all-extras
# ... and our own packages': the editable install leaves them in the checkout, out of
# --compile-bytecode's reach, so every `baseline` or `tracer` process compiled the ~100 modules
# it imports again (~0.13 s a command; thousands of commands in the test suite). Stale files
# are recompiled (their source's mtime is checked); a read-only checkout just goes without.
.venv/bin/python -m compileall -qq -j 0 tracer baseline dags >/dev/null 2>&1 || true
# The differ's hot loops in C (the editable install's build hook makes them too, but uv reuses a
# cached build): built beside their source when a compiler is there, else the numpy versions run.
if built="$(.venv/bin/python -m baseline.run.native 2>&1)"; then say "${built#baseline.run.native: }"; fi

# Debian's bcc is pure Python over libbcc.so; expose only that package to the venv.
if [ -d /usr/lib/python3/dist-packages/bcc ]; then
    site="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    # written only when not already so: an installed checkout may be mounted read-only
    if [ "$(readlink .venv/bcc-shim/bcc 2>/dev/null)" != /usr/lib/python3/dist-packages/bcc ]; then
        mkdir -p .venv/bcc-shim
        ln -sfn /usr/lib/python3/dist-packages/bcc .venv/bcc-shim/bcc
    fi
    if [ "$(cat "$site/debian_bcc.pth" 2>/dev/null)" != "$PWD/.venv/bcc-shim" ]; then
        echo "$PWD/.venv/bcc-shim" > "$site/debian_bcc.pth"
    fi
fi
