# The generator image of a tool installed in the image itself (install kinds apt and pip): its install.sh,
# the host's own recipe, runs here. Build context: tools/; build args from the tool's manifest
# (harness/runtimes/images.py docker_build): TOOL, its folder; RUNTIME_PACKAGES, extra Debian packages.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
# The same first layer in every generator image (both shared Dockerfiles, before any build arg): Docker's
# build cache makes it once per machine, not once per tool.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends netbase iproute2 curl \
 && rm -rf /var/lib/apt/lists/*
ARG RUNTIME_PACKAGES=
RUN if [ -n "${RUNTIME_PACKAGES}" ]; then apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${RUNTIME_PACKAGES} \
 && rm -rf /var/lib/apt/lists/*; fi
ARG TOOL
COPY _lib/ /tmp/lth/_lib/
COPY ${TOOL}/ /tmp/lth/${TOOL}/
# The RUN also drops apt's caches, which install.sh rewrites: else they would be in the image twice (~80 MB).
RUN LTH_IMAGE=1 /tmp/lth/${TOOL}/install.sh \
 && rm -rf /tmp/lth /var/lib/apt/lists/* /var/cache/apt/*
CMD ["sleep", "infinity"]
