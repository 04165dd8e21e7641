# shellcheck shell=bash
# Shared helpers for the scripts in this directory. Source it, don't run it:
#   . "$(dirname "$0")/lib.sh"

# Repository root (the directory that holds Package.swift).
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export REPO_ROOT

# Make sure the Swift toolchain is on PATH (fresh shells may lack it).
if ! command -v swift >/dev/null 2>&1 && [ -d /opt/swift/usr/bin ]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
# nginx lives in /usr/sbin, which non-login shells may not have.
case ":$PATH:" in *:/usr/sbin:*) ;; *) export PATH="$PATH:/usr/sbin:/sbin" ;; esac

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Run as root, or through sudo when we are not root.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root (or sudo) to run: $*"
    fi
}

# ensure_packages pkg...: install the Debian packages that are not installed yet.
# Does nothing (no apt-get update, no network) when everything is present.
ensure_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    command -v apt-get >/dev/null 2>&1 || die "missing packages (${missing[*]}) and no apt-get"
    log "installing: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# Packages needed to build the server (libpq-dev: the Postgres module links libpq; zlib1g-dev:
# the Gzip module links zlib).
BUILD_PACKAGES=(libsqlite3-dev libcurl4-openssl-dev libpq-dev libssl-dev zlib1g-dev pkg-config)
# The Images module links libvips (runtime package: libvips42).
BUILD_PACKAGES+=(libvips-dev)

ensure_build_deps() { ensure_packages "${BUILD_PACKAGES[@]}"; }

# nginx: any flavour will do (nginx-light is the smallest); install nginx-light if none is.
ensure_nginx() {
    if command -v nginx >/dev/null 2>&1; then return 0; fi
    ensure_packages nginx-light
}

# Tools used by the tests and the benchmark. postgresql: the tests start throwaway clusters
# (HTTPTestSupport's PostgresServer; util-linux's runuser runs them as an unprivileged user).
ensure_test_deps() {
    ensure_build_deps
    ensure_nginx
    ensure_packages wrk curl python3 util-linux procps openssl postgresql
    # `vips` and `vipsheader` make and decode the cover tests' images (`vipsthumbnail` is the
    # benchmark's reference).
    ensure_packages libvips-tools
    # PatroniFailoverTests run etcd and three PostgreSQL nodes under Patroni (Debian's packages:
    # Patroni 3.0 runs on Debian's /usr/bin/python3, patronictl included).
    ensure_packages patroni etcd-server
}

# Python packages, installed quietly with pip only when not importable.
# ensure_pip_module import_name pip_name (a pip_name of name==version goes to ensure_pip_pinned)
ensure_pip_module() {
    local mod="$1" pkg="${2:-$1}" py
    case "$pkg" in *==*) ensure_pip_pinned "$mod" "$pkg"; return ;; esac
    py="$(command -v python3 || true)"
    [ -n "$py" ] || return 0
    "$py" -c "import $mod" >/dev/null 2>&1 && return 0
    pip_install "$py" "$pkg" || log "warning: could not pip install $pkg"
}

# A pinned Python package: installs name==version unless exactly that version is installed
# (a different installed version is replaced); fails when it cannot.
# ensure_pip_pinned import_name name==version
ensure_pip_pinned() {
    local mod="$1" pkg="$2" py have
    py="$(command -v python3 || true)"
    [ -n "$py" ] || return 0
    have="$(pip_version "$py" "${pkg%%==*}")"
    if [ "$have" = "${pkg#*==}" ] && "$py" -c "import $mod" >/dev/null 2>&1; then return 0; fi
    log "installed ${pkg%%==*}: ${have:-none}; want ${pkg#*==}"
    pip_install "$py" "$pkg" || true
    have="$(pip_version "$py" "${pkg%%==*}")"
    [ "$have" = "${pkg#*==}" ] || die "could not pip install $pkg (installed: ${have:-none})"
}

# pip_version python distribution: the installed version, or nothing.
pip_version() {
    "$1" -c 'import importlib.metadata as m, sys
try: print(m.version(sys.argv[1]))
except m.PackageNotFoundError: pass' "$2" 2>/dev/null || true
}

# pip_install python requirement: `python -m pip install` into that interpreter (a virtual
# environment's, pyenv's or the system's); outside a virtual environment, if pip refuses,
# again with --break-system-packages (Debian's externally managed system Python). Console
# scripts land in that interpreter's bin directory, which need not be on PATH: run the tools
# with `python3 -m`.
pip_install() {
    log "pip install $2 (into $("$1" -c 'import sys; print(sys.prefix)' 2>/dev/null))"
    "$1" -m pip install -q --disable-pip-version-check "$2" >&2 && return 0
    "$1" -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)' 2>/dev/null && return 1
    "$1" -m pip install -q --disable-pip-version-check --break-system-packages "$2" >&2
}

# fresh_python_path DIR: makes a new virtual environment in DIR/venv and prints a PATH on which
# `python3` is its interpreter (DIR/bin/python3 runs it) and nothing else of it: its bin
# directory, where pip puts console scripts, is left out, and so are pyenv's shim directories
# (a shim does not exist until `pyenv rehash`). Fails if any PyPI tool the tests need is already
# importable, or a console script of one is on that PATH. .ci/run runs scripts/test so, to
# prove that scripts/test installs what it needs and runs every Python tool as `python3 -m`.
fresh_python_path() {
    local dir="$1" path entry module tool entries
    python3 -m venv "$dir/venv" >&2 2>/dev/null || { ensure_packages python3-venv >&2; python3 -m venv "$dir/venv" >&2; }
    mkdir -p "$dir/bin"
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$dir/venv/bin/python3" >"$dir/bin/python3"
    chmod +x "$dir/bin/python3"
    path="$dir/bin"
    IFS=: read -ra entries <<<"$PATH"
    for entry in "${entries[@]}"; do
        case "$entry" in */shims | "$dir"/*) ;; *) path="$path:$entry" ;; esac
    done
    for module in openapi_spec_validator yaml jsonschema referencing openapi_python_client openapi_generator_cli pydantic selenium; do
        ! PATH="$path" python3 -c "import $module" 2>/dev/null || die "the fresh Python already has $module"
    done
    for tool in openapi-python-client openapi-spec-validator openapi-generator-cli; do
        ! PATH="$path" command -v "$tool" >/dev/null || die "$tool is on the fresh PATH"
    done
    printf '%s\n' "$path"
}

# scripts/container-test: podman with runc (crun refuses the hybrid cgroup layout here), debootstrap for the base images
# (no registry is reachable), nginx and PostgreSQL on the host for the proxy and shared-database
# checks, curl/python3 for the requests.
ensure_container_deps() {
    ensure_packages podman runc debootstrap curl python3 postgresql util-linux procps
    ensure_nginx
}
