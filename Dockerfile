# One image, four roles: the console (the standalone Next.js server), the Resolver, the demo, and the operator's
# counter recount. The role is the container's command: `docker run nimbus console|resolver|demo` (default console),
# `docker run --rm nimbus recount --all` or `recount <endpoint id>...` (scripts/docker-role.sh). Every role reads the same
# environment variables as outside a container (docs/deploy.md). NOT RUN in this repository's CI: no Docker there;
# the standalone server itself is tested (server/standalone.test.ts).
#
#   docker build -t nimbus .
#   docker run -p 3000:3000 -e NIMBUS_AUTH=entra -e ... nimbus console
#   docker run -e NIMBUS_SERVICEBUS_CONNECTION_STRING=... -e NIMBUS_COSMOS_ENDPOINT=... nimbus resolver

# 1. Dependencies, from the lock file and the manifests only (cached until they change). The lock names the
# workspace packages/sdk: without that folder's package.json, `npm ci` installs but leaves out the link
# node_modules/@nimbus/sdk -> ../../packages/sdk (npm 11, tried), so the manifest comes first.
FROM node:20-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/sdk/package.json ./packages/sdk/package.json
RUN npm ci --no-audit --no-fund

# 2. The console's production build: .next/standalone (server.js + traced node_modules + static files + catalog).
FROM node:20-slim AS build
WORKDIR /app
ENV NEXT_TELEMETRY_DISABLED=1
COPY --from=deps /app/node_modules ./node_modules
COPY . .
RUN npm run build

# 3. The runtime: no compilers, no build cache, a non-root user.
FROM node:20-slim AS runtime
WORKDIR /app
ENV NODE_ENV=production \
    NEXT_TELEMETRY_DISABLED=1 \
    PORT=3000 \
    HOSTNAME=0.0.0.0 \
    NIMBUS_CATALOG=/app/catalog/demo.json
RUN groupadd --system --gid 10001 nimbus && useradd --system --uid 10001 --gid nimbus --no-create-home nimbus
# The Resolver, the demo and the recount run from their TypeScript sources through tsx (a dependency kept for that reason).
# They import @nimbus/sdk, which tsx resolves as in the repository: tsconfig.json's "paths" lead to the SDK's
# sources, so the image runs the SDK code the tests run and needs no SDK build (the package's "exports" name a
# dist/ that is never built here). The SDK's package.json keeps the workspace link node_modules/@nimbus/sdk from
# dangling and marks its sources as ES modules. No test comes along: .dockerignore keeps tests, their harnesses and
# fixtures out of the build context. scripts/docker-layout.test.ts lays these COPY lines out (less what
# .dockerignore leaves out) and starts the roles from them.
COPY --from=build --chown=nimbus:nimbus /app/node_modules ./node_modules
COPY --from=build --chown=nimbus:nimbus /app/package.json ./package.json
COPY --from=build --chown=nimbus:nimbus /app/tsconfig.json ./tsconfig.json
COPY --from=build --chown=nimbus:nimbus /app/packages/sdk/package.json ./packages/sdk/package.json
COPY --from=build --chown=nimbus:nimbus /app/packages/sdk/src ./packages/sdk/src
COPY --from=build --chown=nimbus:nimbus /app/lib ./lib
COPY --from=build --chown=nimbus:nimbus /app/resolver-worker ./resolver-worker
COPY --from=build --chown=nimbus:nimbus /app/demo ./demo
COPY --from=build --chown=nimbus:nimbus /app/scripts ./scripts
COPY --from=build --chown=nimbus:nimbus /app/catalog ./catalog
COPY --from=build --chown=nimbus:nimbus /app/.next/standalone ./console
USER nimbus
EXPOSE 3000
# The console answers /api/health (touches neither bus nor store); the Resolver and the demo serve no HTTP, so
# their health is the process being alive.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["sh", "scripts/docker-role.sh", "healthcheck"]
# `docker stop` and the platforms send SIGTERM (to node itself: the entry point execs it) and kill after their grace
# period: the console stops its background duties, releasing their leases, within NIMBUS_STOP_GRACE_MS (default 8 s;
# docs/deploy.md, "Stopping a console"), inside docker's 10 s and the 30 s of Container Apps and Kubernetes.
ENTRYPOINT ["sh", "scripts/docker-role.sh"]
CMD ["console"]
