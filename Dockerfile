# Parley's image: `docker build -t parley .` (docker-compose.yml builds it too).
# Run: docker run -p 8080:8080 -p 9464:9464 -e DATABASE_URL=postgres://… -e PARLEY_ADMIN_TOKEN=… parley

# Build: all dependencies (TypeScript among them), then tsc into dist/.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would build before the sources are copied; the build is the next step.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

# Run: production dependencies only, the compiled service and the CLI, as an unprivileged user.
FROM node:24-bookworm-slim
# GLIBC_TUNABLES (as `npm start` sets it): fixed malloc thresholds. glibc otherwise raises them after
# the first large free (up to 32 MiB mmap, 64 MiB trim), and what V8's compiler threads free at
# start-up (PGlite's WebAssembly above all) stayed in its heaps: ~40 MiB more idle RSS on the
# embedded database. strace counts no extra system call per request.
ENV NODE_ENV=production \
    PARLEY_MODE=production \
    PORT=8080 \
    METRICS_PORT=9464 \
    PARLEY_DATA_DIR=/data \
    GLIBC_TUNABLES=glibc.malloc.trim_threshold=1048576
# PARLEY_DATA_DIR holds the embedded database, used only without DATABASE_URL (one instance, for
# trials: mount a volume at /data to keep it).
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` builds with TypeScript, which is not installed here (dist/ is copied in).
# No production dependency needs its install script: @parcel/watcher's builds from source only on
# request (its binary is a package), msgpackr-extract is an optional accelerator with a JS fallback.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force \
    && mkdir -p /data && chown node:node /data
COPY --from=build /app/dist ./dist
COPY bin ./bin
USER node
# The API, and Prometheus' /metrics (METRICS_PORT; unset it to turn the endpoint off).
EXPOSE 8080 9464
# Slim images have no curl: Node's fetch asks /health/ready (database reachable and migrated).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--liftoff-only", "dist/main.js"]
