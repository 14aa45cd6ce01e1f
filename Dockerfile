# peeklock as one container, in place of the Service Bus emulator's two (the emulator and its SQL Server):
#   docker build -t peeklock .      (or .ci/build-image, which also works with podman)
#   docker run -p 5672:5672 -p 5300:5300 -v peeklock-data:/data peeklock
# It answers where the emulator does: AMQP on 5672, health and the administration API on 5300 (EMULATOR_HTTP_PORT
# moves it), entities from /ServiceBus_Emulator/ConfigFiles/Config.json when that file is mounted (else the shipped
# config/peeklock.json), and the line `Emulator Service is Successfully Up!` once it serves. docs/containers.md.

# ---- build: every dependency, the TypeScript compiler, then only the production dependencies are kept ----------
FROM node:20-bookworm-slim AS build
# The stage's images are nobody's once the build is done: .ci/build-image prunes the untagged ones by this label.
LABEL peeklock.stage=build
# A TLS-intercepting proxy's CA for npm, mounted for the RUN steps by .ci/build-image; never in the shipped stage.
ARG NODE_EXTRA_CA_CERTS
WORKDIR /build
COPY package.json package-lock.json ./
# Scripts wait until the sources are in (the package's `prepare` is the build); this layer is reused while the
# lock file is unchanged.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
RUN npm rebuild && npm run build && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
  && find node_modules -mindepth 1 -maxdepth 1 -type d -empty -delete

# ---- runtime: dist/, bin/, config/ and the production node_modules; no compiler, no sources, no npm cache -------
FROM node:20-bookworm-slim
ENV NODE_ENV=production
# tini as PID 1: Linux gives PID 1 no default signal actions, so a SIGTERM that reaches Node before it has installed
# the broker's handler (until the broker serves) was lost, and `docker stop` waited 10 s for SIGKILL. tini forwards the
# signal to Node, which then ends at once before it serves and stops gracefully (exit 0) after.
RUN apt-get update && apt-get install -y --no-install-recommends tini \
  && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
WORKDIR /opt/peeklock
COPY package.json ./
COPY bin ./bin
COPY config ./config
COPY --from=build /build/node_modules ./node_modules
COPY --from=build /build/dist ./dist
# The data dir belongs to the unprivileged `node` user (uid 1000) of the base image; a new named volume takes this
# ownership when first mounted. A host directory mounted there must be writable by uid 1000. The emulator's config
# directory exists so that Testcontainers can copy a Config.json into it before the start. `peeklock` is on the PATH
# for `docker exec CONTAINER peeklock cert --container --pem` (the local CA, for clients outside).
RUN mkdir /data /ServiceBus_Emulator /ServiceBus_Emulator/ConfigFiles && chown node:node /data \
  && ln -s /opt/peeklock/bin/peeklock.js /usr/local/bin/peeklock
USER node
VOLUME /data
# 5672 AMQP, 5300 HTTP (health, metrics, administration API, explorer): the emulator's two. amqps listens on 5671 too
# (publish it with -p 5671:5671); it is left out here because podman 4.3's Docker API reports every exposed port as
# a binding, and Testcontainers then waits for a port nobody asked to publish.
EXPOSE 5672 5300
# The slim base has no curl: Node's own fetch asks /health.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.EMULATOR_HTTP_PORT||5300)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# The broker handles SIGTERM itself: in-flight commits finish, connections close, exit code 0.
STOPSIGNAL SIGTERM
# In a container only all interfaces make a published port reachable; flags after the image name are appended.
ENTRYPOINT ["/usr/bin/tini", "--", "node", "bin/peeklock.js", "start", "--container", "--host", "0.0.0.0", "--data-dir", "/data"]
