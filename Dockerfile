# The Temporal worker (worker/main.ts), built by `cdk deploy` from the repo root.
# Sources are transpiled file by file (no bundling), so the tree keeps its shape:
# worker/main.js finds ../workflows at run time, and Temporal's own bundler
# packs workflows/ and core/ into the workflow sandbox when the worker starts.

FROM node:22-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN find . -name '*.ts' -not -name '*.d.ts' -not -path './node_modules/*' > /tmp/sources \
 && npx esbuild $(cat /tmp/sources) --outdir=/out --outbase=. --platform=node --target=node22 \
      --format=cjs --keep-names --sourcemap --log-level=warning \
 && find . -name '*.json' -not -path './node_modules/*' -exec cp --parents {} /out/ \; \
 && test -f /out/worker/main.js && test -f /out/workflows/index.js

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
