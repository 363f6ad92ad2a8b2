# GPU toolkits for the `vulkan` and `cuda` builds (scripts/test-gpu,
# scripts/install, scripts/bench engine --gpu-layers). Source after common.sh.

# Debian 12's Vulkan headers (1.3.239) are older than ggml-vulkan needs
# (1.3.272+); Debian 13's headers, unpacked into a folder, are used instead.
# The loader and the driver (lavapipe) come from the system.
ensure_vulkan() {
    local missing=()
    command -v glslc >/dev/null || missing+=(glslc)
    dpkg -s mesa-vulkan-drivers >/dev/null 2>&1 || missing+=(mesa-vulkan-drivers)
    dpkg -s libvulkan-dev >/dev/null 2>&1 || missing+=(libvulkan-dev)
    dpkg -s spirv-headers >/dev/null 2>&1 || missing+=(spirv-headers)
    command -v vulkaninfo >/dev/null || missing+=(vulkan-tools)
    if ((${#missing[@]})); then
        log "installing Vulkan build and run-time packages: ${missing[*]}"
        local sudo=""
        [ "$(id -u)" -ne 0 ] && sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    # A Vulkan SDK of the user's own is used as it is.
    if [ -z "${VULKAN_SDK:-}" ] || [ ! -f "$VULKAN_SDK/include/vulkan/vulkan.hpp" ]; then
        export VULKAN_SDK="${XDG_CACHE_HOME:-$HOME/.cache}/agent/vulkan-sdk"
        unpack_vulkan_headers
    fi
    # With no GPU but Mesa's lavapipe: ggml skips CPU-type Vulkan devices
    # unless they are named, and llama.cpp's own llvmpipe CI also turns off
    # f16 and cooperative matrices. Real GPUs are left alone.
    if ! vulkaninfo --summary 2>/dev/null | grep -q 'PHYSICAL_DEVICE_TYPE_\(DISCRETE\|INTEGRATED\)_GPU'; then
        export GGML_VK_VISIBLE_DEVICES="${GGML_VK_VISIBLE_DEVICES:-0}"
        export GGML_VK_DISABLE_F16="${GGML_VK_DISABLE_F16:-1}"
        export GGML_VK_DISABLE_COOPMAT="${GGML_VK_DISABLE_COOPMAT:-1}"
    fi
}

unpack_vulkan_headers() {
    if [ ! -f "$VULKAN_SDK/include/vulkan/vulkan.hpp" ]; then
        log "unpacking Debian 13 Vulkan headers into $VULKAN_SDK"
        local tmp
        tmp="$(mktemp -d)"
        local pool=http://deb.debian.org/debian/pool/main
        # name, url, sha256
        local debs=(
            "libvulkan-dev $pool/v/vulkan-loader/libvulkan-dev_1.4.309.0-1_amd64.deb 8d329d465e16168afff58b1bd0dd6db46aac2cc3f56054a481b25a04e90b345a"
            "spirv-headers $pool/s/spirv-headers/spirv-headers_1.6.1+1.4.309.0-1_all.deb dc18db866d63680351c40ac6b6bece34cb52da64a7799ce1cc4f16f6bff4d064"
        )
        local entry name url sum
        for entry in "${debs[@]}"; do
            read -r name url sum <<<"$entry"
            curl -fsSL -o "$tmp/$name.deb" "$url"
            echo "$sum  $tmp/$name.deb" | sha256sum -c --quiet -
            dpkg-deb -x "$tmp/$name.deb" "$tmp/root"
        done
        mkdir -p "$VULKAN_SDK/lib"
        rm -rf "$VULKAN_SDK/include"
        cp -r "$tmp/root/usr/include" "$VULKAN_SDK/include"
        rm -rf "$tmp"
    fi
    # Link against the system's loader.
    ln -sf "$(ldconfig -p | awk '/libvulkan\.so\.1 / { print $NF; exit }')" "$VULKAN_SDK/lib/libvulkan.so"
}

ensure_gpu_toolkit() { # BACKEND
    case "$1" in
    vulkan) ensure_vulkan ;;
    cuda) command -v nvcc >/dev/null || { echo "error: the cuda backend needs the CUDA toolkit (nvcc on PATH)" >&2; exit 1; } ;;
    *) ;;
    esac
}
