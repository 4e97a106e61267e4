# gputree on an NVIDIA GPU.
#   docker build -t gputree .
#   docker run --rm --gpus all gputree bench
FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04

RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-pip \
    && rm -rf /var/lib/apt/lists/*

ENV VIRTUAL_ENV=/opt/gputree PATH=/opt/gputree/bin:$PATH
RUN python3 -m venv "$VIRTUAL_ENV"

WORKDIR /src
COPY pyproject.toml README.md ./
COPY gpu_tree ./gpu_tree
COPY kernels ./kernels
RUN pip install --no-cache-dir ".[cuda13]" && rm -rf /src

WORKDIR /work
ENTRYPOINT ["gputree"]
CMD ["bench"]
