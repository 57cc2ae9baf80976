FROM node:24-slim
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
USER node
ENTRYPOINT ["node", "src/cli/index.ts"]
