# gputree on an NVIDIA GPU (the host needs the NVIDIA Container Toolkit).
#   docker build -t gputree .
#   docker run --rm --gpus all gputree bench
#   docker run --rm --gpus all -v "$PWD:/work" gputree train data.csv --target label -o model.json
FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04

# Ubuntu's archive replaces package versions in place, so pinning them would break the
# build within weeks; the base image tag is the pin.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-pip \
    && rm -rf /var/lib/apt/lists/*

# numba keeps the compiled kernels in NUMBA_CACHE_DIR (gpu_tree/kernels/compilation.py).
ENV VIRTUAL_ENV=/opt/gputree PATH=/opt/gputree/bin:$PATH NUMBA_CACHE_DIR=/opt/gputree/numba-cache
RUN python3 -m venv "$VIRTUAL_ENV"

WORKDIR /src
COPY pyproject.toml README.md ./
COPY gpu_tree ./gpu_tree
COPY kernels ./kernels
# The package is installed from this checkout; its dependencies' lower bounds live in
# pyproject.toml. The import check fails the build if the kernels did not install.
# hadolint ignore=DL3013
RUN pip install --no-cache-dir ".[cuda13]" \
    && NUMBA_ENABLE_CUDASIM=1 python -c "import gpu_tree.kernels.cuda, gpu_tree.kernels.cpu" \
    && rm -rf /src

# Compile the CPU kernels now, so that a container's first `gputree train` starts in a
# second rather than after tens of seconds of compiling: the warm-up trains and predicts
# small and large synthetic files through the command line. numba's cache entries are
# keyed on the host's CPU model, so they serve containers run on the machine (or the
# kind of CPU) that built the image; elsewhere numba compiles again, into the same cache.
# The CUDA kernels cannot be compiled here: numba builds them for the GPU it finds (its
# compute capability is in their cache key) and `docker build` has no GPU. They compile
# on the first GPU run and are cached here too. Any user may read and add to the cache
# (`docker run -u UID`: an unknown uid with HOME /).
RUN python -m gpu_tree.app.warm_up \
    && chmod -R a+rwX "$NUMBA_CACHE_DIR"

# ubuntu:24.04 already has uid 1000 (user "ubuntu"); run as a user of our own, not root.
RUN useradd --create-home --uid 10001 gputree && mkdir -p /work && chown 10001 /work
USER 10001
WORKDIR /work
ENTRYPOINT ["gputree"]
CMD ["bench"]
