FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
COPY test ./test
COPY bench ./bench
RUN npm ci && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
USER 65532:65532
# Memory at rest (docs/benchmarks.md, "Side by side with the Go operator"; bench/peer starts the
# server with this ENTRYPOINT's node flags and these ENV values): semi-spaces of 2 MiB instead of
# V8's 16, which a snapshot's burst of short-lived objects otherwise leaves committed at their
# maximum; and two malloc arenas instead of glibc's eight per core, one for each thread that ever
# allocated (the git worker, libuv's pool), whose freed pages stay resident.
ENV MALLOC_ARENA_MAX=2
ENTRYPOINT ["node", "--max-semi-space-size=2", "dist/bundle/main.js"]
CMD ["serve"]
