# gputree on an NVIDIA GPU (the host needs the NVIDIA Container Toolkit).
#   docker build -t gputree .
#   docker run --rm --gpus all gputree bench
#   docker run --rm --gpus all -u "$(id -u):$(id -g)" -v "$PWD:/work" gputree train data.csv --target label -o model.json
FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# Ubuntu's archive replaces package versions in place, so pinning them would break the
# build within weeks; the base image tag is the pin.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-pip \
    && rm -rf /var/lib/apt/lists/*

# numba keeps the compiled kernels in NUMBA_CACHE_DIR (gpu_tree/kernels/compilation.py),
# matplotlib its font list in MPLCONFIGDIR.
ENV VIRTUAL_ENV=/opt/gputree PATH=/opt/gputree/bin:$PATH \
    NUMBA_CACHE_DIR=/opt/gputree/numba-cache MPLCONFIGDIR=/opt/gputree/matplotlib
RUN python3 -m venv "$VIRTUAL_ENV"

WORKDIR /src
COPY pyproject.toml README.md ./
COPY docker/constraints.txt ./docker/
COPY gpu_tree ./gpu_tree
COPY kernels ./kernels
# The package from this checkout with its cuda13, bench (the peers of `gputree bench`),
# plot and parquet extras, every package at the exact version docker/constraints.txt
# pins (tests/integration/test_docker.py keeps it in step with pyproject.toml): the diff fails the
# build where pip installed a package the file does not pin, or another version. The
# import check fails it where the kernels did not install.
RUN pip install --no-cache-dir -c docker/constraints.txt ".[cuda13,bench,plot,parquet]" \
    && grep -v '^#' docker/constraints.txt | grep . | sort > /tmp/pinned.txt \
    && pip freeze --exclude gpu-tree | sort | diff /tmp/pinned.txt - \
    && NUMBA_ENABLE_CUDASIM=1 python -c "import gpu_tree.kernels.cuda.histograms, gpu_tree.kernels.cpu.histograms" \
    && rm -rf /src /tmp/pinned.txt

# Compile the CPU kernels now, so that a container's first `gputree train` starts in a
# second rather than after tens of seconds of compiling: the warm-up trains and predicts
# small and large synthetic files through the command line. numba's cache entries are
# keyed on the host's CPU model, so they serve containers run on the machine (or the
# kind of CPU) that built the image; elsewhere numba compiles again, into the same cache.
# The CUDA kernels cannot be compiled here: numba builds them for the GPU it finds (its
# compute capability is in their cache key) and `docker build` has no GPU. They compile
# on the first GPU run and are cached here too. Any user may read and add to the cache
# (`docker run -u UID`: an unknown uid with HOME /): numba uses a cache folder only where
# it can write it. Where it cannot (`docker run --read-only`), the kernels compile into
# the temporary directory, or run uncached; CuPy's kernels go to ~/.cupy, else there too.
RUN gputree warm-up \
    && python -c "import matplotlib.font_manager" \
    && chmod -R a+rwX "$NUMBA_CACHE_DIR" "$MPLCONFIGDIR"

# ubuntu:24.04 already has uid 1000 (user "ubuntu"); run as a user of our own, not root.
RUN useradd --create-home --uid 10001 gputree && mkdir -p /work && chown 10001 /work
USER 10001
WORKDIR /work
ENTRYPOINT ["gputree"]
CMD ["bench"]
