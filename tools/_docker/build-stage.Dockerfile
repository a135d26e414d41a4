# The generator image of a tool that needs a toolchain to install but not to run (install kinds go,
# cargo, npm, maven): its install.sh, the host's own recipe, runs in a build stage and the image holds
# only what it installed. Build context: tools/; build args from the tool's manifest (harness/runtimes/images.py
# docker_build): TOOL, its folder; INSTALLED, the path copied into the image; RUNTIME_PACKAGES, extra
# Debian packages the tool runs with (a JRE); TOOLCHAIN, a tools/_lib/ script fetching the kind's toolchain.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE} AS build
# Before TOOL is declared, so that these layers are the same for every tool of a kind: Docker's build
# cache fetches the toolchain once (Go's), and is an empty layer for kinds without one.
COPY _lib/*-toolchain.sh /tmp/lth/_lib/
ARG TOOLCHAIN=
RUN if [ -n "${TOOLCHAIN}" ]; then "/tmp/lth/_lib/${TOOLCHAIN}"; fi
ARG TOOL
COPY _lib/ /tmp/lth/_lib/
COPY ${TOOL}/ /tmp/lth/${TOOL}/
RUN LTH_IMAGE=1 /tmp/lth/${TOOL}/install.sh

FROM ${BASE_IMAGE}
# The same first layer in every generator image (both shared Dockerfiles, before any build arg): Docker's
# build cache makes it once per machine, not once per tool.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends netbase iproute2 curl \
 && rm -rf /var/lib/apt/lists/*
ARG RUNTIME_PACKAGES=
# man1: openjdk's postinst needs it and slim images lack it.
RUN if [ -n "${RUNTIME_PACKAGES}" ]; then apt-get update \
 && mkdir -p /usr/share/man/man1 \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${RUNTIME_PACKAGES} \
 && rm -rf /var/lib/apt/lists/*; fi
ARG INSTALLED
COPY --from=build ${INSTALLED} ${INSTALLED}
CMD ["sleep", "infinity"]
