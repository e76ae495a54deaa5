#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and test retrystorm:
# Debian packages (when run as root) and the page's npm packages.
# Usage: scripts/setup.sh [--web] [--browser]
set -euo pipefail
cd "$(dirname "$0")/.."

want_web=0
want_browser=0
for arg in "$@"; do
  case "$arg" in
    --web) want_web=1 ;;
    --browser) want_web=1; want_browser=1 ;;
  esac
done

packages=(build-essential cmake pkg-config nlohmann-json3-dev libyaml-cpp-dev libcli11-dev
          libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev libbenchmark-tools libcpp-httplib-dev clang-format
          libgrpc++-dev haproxy nginx python3-botocore prometheus libboost-dev libeigen3-dev
          pybind11-dev python3-dev python3-pandas python3-numpy python3-matplotlib python3-pytest
          python3-nbclient python3-ipykernel jupyter-nbconvert
          python3-distributed python3-dask python3-tqdm python3-scipy python3-ipywidgets
          python3-setuptools python3-wheel python3-build python3-venv python3-pip)
[ "$want_web" = 1 ] && packages+=(nodejs npm)
[ "$want_browser" = 1 ] && packages+=(chromium)

missing=()
for p in "${packages[@]}"; do
  # nodejs/npm may come from elsewhere than Debian; a working command is enough.
  case "$p" in
    nodejs) command -v node >/dev/null && continue ;;
    npm) command -v npm >/dev/null && continue ;;
    chromium) [ -x /usr/bin/chromium ] && continue ;;
  esac
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Another apt-get (an unattended upgrade) may hold the lock: wait for it.
    apt-get -o DPkg::Lock::Timeout=600 update -qq || true
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: missing Debian packages: ${missing[*]}" >&2
    echo "setup: run as root, or: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

if [ "$want_web" = 1 ] && [ -f web/package-lock.json ]; then
  if [ ! -d web/node_modules ] || [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
    echo "setup: npm ci (web/)"
    (cd web && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi

# The conformance suite's real Node clients (@grpc/grpc-js, @smithy/util-retry);
# their tests are skipped when npm is absent.
node_dir=tests/conformance/node
if command -v npm >/dev/null && [ -f "$node_dir/package-lock.json" ]; then
  if [ ! -d "$node_dir/node_modules" ] || [ "$node_dir/package-lock.json" -nt "$node_dir/node_modules/.package-lock.json" ]; then
    echo "setup: npm ci ($node_dir/)"
    (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi
