# fencekeeper's image, the one k8s/ deploys:
#
#   docker build -t fencekeeper:0.1 .
#
# Build stages: Debian 12 with the build dependencies of scripts/setup.sh --build-only, then the
# sources. Runtime stage: debian:12-slim with fencekeeper and fencectl (stripped) in
# /usr/local/bin, libfencekeeper.so in /usr/local/lib and the libraries they link
# (scripts/runtime-files.sh, which tests/k8s runs in a chroot), as uid 10001. No ZooKeeper or
# Java: --dev is for a workstation, not for the image.

# Its own stage, so that a builder can make it ahead of the sources (tests/e2e/pods.sh --prepare).
FROM debian:12 AS deps
WORKDIR /src
COPY scripts/setup.sh scripts/
RUN bash scripts/setup.sh --build-only && rm -rf /var/lib/apt/lists/*

FROM deps AS build
COPY . .
# Compiled as scripts/test.sh compiles build/ (-O2, line tables, which runtime-files.sh strips),
# through ccache: tests/e2e/pods.sh mounts the host's cache, whose objects then serve this build.
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFK_DEBUG_LEVEL=1 -DFK_CCACHE=ON \
      -DBUILD_TESTING=OFF \
 && cmake --build build -j"$(nproc)" --target fencekeeper fencectl fencekeeper_c \
 && bash scripts/runtime-files.sh build /rootfs

FROM debian:12-slim
COPY --from=build /rootfs/ /
RUN ldconfig \
 && groupadd --gid 10001 fencekeeper \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin fencekeeper
USER 10001:10001
ENTRYPOINT ["fencekeeper"]
CMD ["--help"]
