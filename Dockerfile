# The Temporal worker (worker/main.ts), built by `cdk deploy` from the repo root.
# The build itself is scripts/build-worker.sh (esbuild, file by file), which the
# local stack also runs for PROVISIONER_ARTIFACTS=shipped: one command, no drift.

FROM node:22-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN sh scripts/build-worker.sh /out

FROM node:22-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:22-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /out ./
USER node
CMD ["node", "--enable-source-maps", "worker/main.js"]
