# The generator image of a tool installed in the image itself (install kinds apt and pip): its install.sh,
# the host's own recipe, runs here. Build context: tools/; build args from the tool's manifest
# (harness/adapter.py docker_build): TOOL, its folder; RUNTIME_PACKAGES, extra Debian packages.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
ARG RUNTIME_PACKAGES=
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends netbase iproute2 curl ${RUNTIME_PACKAGES} \
 && rm -rf /var/lib/apt/lists/*
ARG TOOL
COPY _lib/ /tmp/lth/_lib/
COPY ${TOOL}/ /tmp/lth/${TOOL}/
# The RUN also drops apt's caches, which install.sh rewrites: else they would be in the image twice (~80 MB).
RUN LTH_IMAGE=1 /tmp/lth/${TOOL}/install.sh \
 && rm -rf /tmp/lth /var/lib/apt/lists/* /var/cache/apt/*
CMD ["sleep", "infinity"]
